module trio-evals

// The suite is data: a module of its own keeps the tasks' Go files (seeds,
// hidden tests) out of trio's packages.

go 1.22
