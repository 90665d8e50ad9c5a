// Package systemtest runs real kcd processes on loopback and checks what a
// cluster of them does when processes are killed, restarted, added and
// removed.
//
// The harness (Build, StartCluster, Node) is exported so that the
// benchmarks under bench/ can drive the same processes; the tests are
// TestIntegrationProcess… in this package's _test files. They skip under
// -short and run in make test's integration phase:
//
//	go test -count=1 -run '^TestIntegrationProcess' -v ./daemon/systemtest/
//
// TestIntegrationChaos is the fault schedule of make chaos (flags
// -chaos.duration, -chaos.seed, -chaos.report, …; see docs/testing.md); its
// verifier is a pure function over the records read back, tested on its own.
//
// Every node gets free loopback ports, a data dir under the test's temp dir
// and a log file; the harness kills every process it started when the test
// ends (and, on Linux, the kernel kills them if the test binary dies first),
// and prints the tail of each node's log when the test failed.
package systemtest
