package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// TicketArgs are the arguments of a custom tool. Fields without omitempty
// are required; descriptions and enums come from jsonschema tags.
type TicketArgs struct {
	tools.NoEffects
	ID     string `json:"id" jsonschema:"description=Ticket number such as TRIO-12."`
	Fields string `json:"fields,omitempty" jsonschema:"enum=summary,enum=all,description=How much to return."`
}

// Example: an embedder's own tool, typed, registered next to (or instead
// of) the built-ins, handed to one role through a View and called through
// the gate like every other tool.
func ExampleNew() {
	lookup := tools.New("lookup_ticket", "Look a ticket up in the tracker.",
		func(ctx context.Context, a TicketArgs) (tools.Result, error) {
			// A problem the model can fix is a result; a broken tracker
			// would be a Go error.
			if a.ID != "TRIO-12" {
				return tools.Result{OK: false, Output: "no ticket " + a.ID}, nil
			}
			return tools.Result{OK: true, Output: "TRIO-12: make the gate fast"}, nil
		})

	reg, err := tools.NewRegistry(lookup)
	if err != nil {
		panic(err)
	}
	worker, err := reg.View("lookup_ticket")
	if err != nil {
		panic(err)
	}
	pol, err := policy.Parse("embedded.yaml", []byte("version: 1\nmode: unattended\n"))
	if err != nil {
		panic(err)
	}
	gate := tools.NewGate(pol, tools.WithObserver(tools.ObserverFunc(func(r tools.Record) {
		fmt.Println("audit:", r.Tool, r.Outcome)
	})))

	for _, args := range []string{`{"id":"TRIO-12"}`, `{"id":12}`} {
		res, err := gate.Call(context.Background(), worker,
			tools.Call{ID: "1", Name: "lookup_ticket", Arguments: json.RawMessage(args)})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.ForModel())
	}
	// Output:
	// audit: lookup_ticket ok
	// {"ok":true,"output":"TRIO-12: make the gate fast"}
	// audit: lookup_ticket invalid
	// {"ok":false,"output":"lookup_ticket: argument \"id\": expected string, got integer; fix the arguments and call again"}
}
