// Package telemetry exports a run as OpenTelemetry traces over OTLP
// (http/protobuf, http/json or grpc, through the OpenTelemetry SDK's
// exporters), following the GenAI semantic conventions: one trace per run session
// (an invoke_workflow span), an invoke_agent span per role phase (the
// Planner, the test designer, each Worker step and repair round, each
// Critic check, each summary), a chat span per model call and an
// execute_tool span per tool call, with the gate's decision and rule.
//
// It is an observer of the agent's events (agent.WithObserver), so the
// agent knows nothing of OpenTelemetry; spans are built from each event's
// time and duration after the fact. Message contents (model replies, tool
// arguments and results) are recorded only when Config.Contents is set.
// A nil *Tracer observes nothing, at the cost of one nil check per event.
//
// The package must not change a run: an exporter that fails is reported
// by Shutdown, never to the agent.
package telemetry
