// Command kcd is the kcd daemon: a Kafka Connect runtime whose coordination
// and metadata live in an embedded Raft group instead of Kafka.
package main

import "github.com/kcd-project/kcd/daemon/kcdcmd"

func main() { kcdcmd.Main() }
