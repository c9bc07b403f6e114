package agent

// WithCheckpointHook calls fn with the run folder after every checkpoint
// (state.json written), in the session's goroutine, while nothing else
// writes to the run folder or the workspace: a consistent point to copy
// both elsewhere (a durable run commits them to a store there). An error
// from fn fails the checkpoint, which stops the session: a hook that
// finds its session superseded (a stale epoch) stops it this way.
func WithCheckpointHook(fn func(runDir string) error) Option {
	return func(c *config) error {
		c.checkpointHooks = append(c.checkpointHooks, fn)
		return nil
	}
}

// afterCheckpoint runs the WithCheckpointHook functions.
func (r *run) afterCheckpoint() error {
	for _, fn := range r.cfg.checkpointHooks {
		if err := fn(r.dir); err != nil {
			return err
		}
	}
	return nil
}
