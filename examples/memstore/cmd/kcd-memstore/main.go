// Command kcd-memstore is kcd with the example backend "memory" built in:
// how a third party builds kcd with its own metadata store backend, without
// forking kcd. An example only (see package memstore); start it with
// --store memory to bootstrap a cluster on it.
package main

import (
	"github.com/kcd-project/kcd/daemon/kcdcmd"
	_ "github.com/kcd-project/kcd/examples/memstore" // registers the backend "memory"
)

func main() { kcdcmd.Main() }
