// Package storetest is for tests: the contract every store.Store keeps
// (Contract) and an S3-compatible server in the test process (FakeS3,
// gofakes3 on loopback), so that the S3 store and the packages above it
// are tested without a network. Only tests import it: the trio binary
// must not link it.
package storetest
