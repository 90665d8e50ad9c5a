// Package version holds the build's version and commit, set at link time.
package version

// Version and Commit are overridden with -ldflags "-X ...".
var (
	Version = "0.1.0-dev"
	Commit  = "unknown"
)
