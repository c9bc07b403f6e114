// Package store is where a durable run keeps what must outlive its host:
// the contents of its workspace and run folder, and the commits that name
// them. A Store is three calls (Put, Get, PutIfAbsent) over string keys,
// small enough for a shared folder (Folder) and for S3-compatible object
// storage (S3: AWS S3, MinIO, R2, whose conditional PutObject makes
// PutIfAbsent atomic) behind the same interface. Package storetest holds
// the contract both keep and an S3 server for tests.
//
// It knows nothing of runs, commits or Temporal: package dist gives keys
// their meaning. It must not import the Temporal SDK.
package store
