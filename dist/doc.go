// Package dist carries a run from one host to another through a store
// (package dist/store): after a checkpoint a Session commits the
// workspace's changes and the run folder's new records, content-addressed
// as the run's start snapshot is (agent.WalkTree: the same walk, each
// content named by its SHA-256, a manifest named by the hash of its own
// bytes), and Restore writes the last commit into a fresh folder on
// another host, where agent.Resume continues the run.
//
// Each session holds an epoch. Commits form one chain per run
// (runs/<run>/commit/<seq>, written with PutIfAbsent); a session starts by
// putting a marker commit with its epoch at the head of the chain, so a
// session with an older epoch (a host that was only cut off) finds its
// next sequence number taken, fails its commit with ErrStale, and stops.
//
// What a policy denies reading in the workspace is listed by name and
// never copied: such a file does not move to another host.
//
// dist must not import the Temporal SDK: package dist/flow maps runs onto
// Temporal, and a durable run's data goes through here only.
package dist
