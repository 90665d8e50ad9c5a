//go:build !linux

// Package fstype names the file system a directory is on: the benchmarks
// report it, since fsync on tmpfs is free and their figures mean nothing
// there.
package fstype

// Of names the file system dir is on; only Linux is known.
func Of(string) string { return "unknown (not Linux)" }
