package planner

import "errors"

// ErrInvalidPlan is wrapped by every error about a plan that failed
// validation or did not decode, after the model had its second chance.
var ErrInvalidPlan = errors.New("invalid plan")
