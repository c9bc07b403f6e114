package panicking

func At(xs []int, i int) int { return xs[i] }
