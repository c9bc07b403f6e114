module example.com/more

go 1.26
