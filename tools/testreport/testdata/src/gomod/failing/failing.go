package failing

func Sub(a, b int) int { return a + b } // bug on purpose
