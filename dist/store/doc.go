// Package store is where a durable run keeps what must outlive its host:
// the contents of its workspace and run folder, and the commits that name
// them. A Store is three calls (Put, Get, PutIfAbsent) over string keys,
// small enough for a shared folder (Folder, here) and for S3-compatible
// object storage behind the same interface.
//
// It knows nothing of runs, commits or Temporal: package dist gives keys
// their meaning. It must not import the Temporal SDK.
package store
