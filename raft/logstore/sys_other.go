//go:build !linux

package logstore

import "os"

// kcd runs on Linux; these fallbacks only keep the package building and
// testable elsewhere.

func fdatasync(f *os.File) error { return f.Sync() }

func preallocate(*os.File, int64) error { return nil }

func lockDir(*os.File) error { return nil }

func dataRun(*os.File, int64) (int64, int64, bool) { return 0, 0, false }

func noReadahead(*os.File) {}
