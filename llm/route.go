package llm

import "context"

// Route returns a Model that sends each request to the model its agent
// role is mapped to in routes, and every other request to fallback, so
// that roles can use different providers (the Worker on Anthropic, the
// rest on an OpenAI-compatible server). A nil fallback refuses unmapped
// roles.
func Route(fallback Model, routes map[string]Model) Model {
	return router{fallback: fallback, routes: routes}
}

type router struct {
	fallback Model
	routes   map[string]Model
}

func (r router) Complete(ctx context.Context, req Request) (Response, error) {
	if m, ok := r.routes[req.Agent]; ok {
		return m.Complete(ctx, req)
	}
	if r.fallback == nil {
		return Response{}, &providerError{msg: "llm: no model for agent " + agentName(req.Agent)}
	}
	return r.fallback.Complete(ctx, req)
}
