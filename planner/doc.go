// Package planner owns the Planner role: it turns a written goal (and a
// listing of the workspace) into a validated Plan — ordered steps, each with
// a description, the files it creates or changes, the expected result and an
// acceptance criterion; the risks; the command that runs the tests; an
// optional command-line program the project declares; and the folder where
// the Critic's acceptance tests go.
//
// The model answers with structured output (a JSON schema reflected from the
// model-facing struct). A reply that does not decode or whose plan fails
// Validate is sent back to the model once, with every problem named by its
// field path (steps[2].files[0]); a second failure is an error wrapping
// ErrInvalidPlan that says what was wrong.
//
// This package must not call tools, touch the workspace or know about the
// Worker or the Critic: it only talks to an llm.Model.
package planner
