package transport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Network is an in-process network for multi-node tests: it hands out a
// Transport per node id and lets a test inject faults at any time.
//
// Delivery is asynchronous: every directed link (from→to) has a bounded
// FIFO queue drained by its own goroutine, which calls the destination's
// Receiver.Process. Delays never reorder a link (like a TCP connection);
// drops and duplicates are decided per message when it is sent, from a
// random source private to the link and seeded from the network's seed and
// the link's ends. So the faults a link sees depend only on the sequence of
// messages sent on it, not on how goroutines interleave: the same seed and
// the same sends give the same outcome. Partitions, isolation and cuts apply
// when a message is sent and again when it is due, so a partition also
// loses what was in flight.
//
// Under testing/synctest the delays run on the bubble's fake clock.
type Network struct {
	seed      uint64
	linkQueue int

	mu     sync.Mutex
	closed bool
	nodes  map[uint64]*MemTransport // live transports by node id
	f      faults
}

// NetworkOption configures NewNetwork.
type NetworkOption func(*Network)

// WithSeed makes drops, duplicates and delays reproducible.
func WithSeed(seed uint64) NetworkOption { return func(n *Network) { n.seed = seed } }

// WithLinkQueue bounds each link's queue (default 1024 messages); messages
// beyond it are dropped and reported unreachable, as the HTTP transport
// does when a peer's queue is full.
func WithLinkQueue(msgs int) NetworkOption { return func(n *Network) { n.linkQueue = msgs } }

// DefaultLinkQueue is a link's queue bound unless WithLinkQueue says.
const DefaultLinkQueue = 1024

// NewNetwork returns a healthy network. Without WithSeed the seed is random;
// Seed tells it, for a failing test to print.
func NewNetwork(opts ...NetworkOption) *Network {
	n := &Network{seed: rand.Uint64(), linkQueue: DefaultLinkQueue, nodes: make(map[uint64]*MemTransport)}
	for _, o := range opts {
		o(n)
	}
	if n.linkQueue <= 0 {
		n.linkQueue = DefaultLinkQueue
	}
	n.f.reset()
	return n
}

// Seed is the seed of the network's random choices.
func (n *Network) Seed() uint64 { return n.seed }

// ErrNodeExists is returned by Transport for an id that is already live.
var ErrNodeExists = errors.New("a live transport already has this node id")

// Transport joins node id to the network, delivering to r. After the
// transport is closed the id may join again (a restarted node).
func (n *Network) Transport(id uint64, r Receiver) (*MemTransport, error) {
	if id == 0 || r == nil {
		return nil, errors.New("transport: a node needs a non-zero id and a receiver")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("transport: network is closed")
	}
	if n.nodes[id] != nil {
		return nil, fmt.Errorf("node %d: %w", id, ErrNodeExists)
	}
	t := newMemTransport(n, id, r)
	n.nodes[id] = t
	return t, nil
}

// Close closes every transport and waits for their goroutines.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	live := make([]*MemTransport, 0, len(n.nodes))
	for _, t := range n.nodes {
		live = append(live, t)
	}
	n.mu.Unlock()
	for _, t := range live {
		t.Close()
	}
	return nil
}

func (n *Network) leave(t *MemTransport) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes[t.id] == t {
		delete(n.nodes, t.id)
	}
}

// live returns the transport of id, nil when it is down.
func (n *Network) live(id uint64) *MemTransport {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[id]
}

// Partition splits the nodes into groups that cannot reach each other;
// nodes named in no group form one more group together. It replaces any
// earlier partition; Isolate and Cut still apply on top.
func (n *Network) Partition(groups ...[]uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.groups = make(map[uint64]int)
	for i, g := range groups {
		for _, id := range g {
			n.f.groups[id] = i
		}
	}
}

// Isolate cuts every link to and from id.
func (n *Network) Isolate(id uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.isolated[id] = true
}

// Cut stops messages from→to only (a one-way fault); 0 stands for every node.
func (n *Network) Cut(from, to uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.cuts[linkKey{from, to}] = true
}

// Drop loses messages from→to with probability p; 0 stands for every node.
func (n *Network) Drop(from, to uint64, p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.drop[linkKey{from, to}] = p
}

// Delay holds each message from→to for a uniform random time in
// [lo, hi]; 0 stands for every node.
func (n *Network) Delay(from, to uint64, lo, hi time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.delay[linkKey{from, to}] = [2]time.Duration{lo, max(lo, hi)}
}

// Duplicate delivers each message twice with probability p, on every link.
func (n *Network) Duplicate(p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.dup = p
}

// Heal removes every fault: partitions, isolation, cuts, drops, delays and
// duplication.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.f.reset()
}

type linkKey struct{ from, to uint64 }

// faults is the network's current damage; guarded by Network.mu.
type faults struct {
	groups   map[uint64]int // nil: no partition
	isolated map[uint64]bool
	cuts     map[linkKey]bool
	drop     map[linkKey]float64
	delay    map[linkKey][2]time.Duration
	dup      float64
}

func (f *faults) reset() {
	*f = faults{
		isolated: make(map[uint64]bool),
		cuts:     make(map[linkKey]bool),
		drop:     make(map[linkKey]float64),
		delay:    make(map[linkKey][2]time.Duration),
	}
}

// lookup finds the most specific setting for a link: exact, then any
// destination, then any source, then every link.
func lookup[V any](m map[linkKey]V, from, to uint64) (V, bool) {
	for _, k := range [...]linkKey{{from, to}, {from, 0}, {0, to}, {0, 0}} {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

func (f *faults) blocked(from, to uint64) bool {
	if f.isolated[from] || f.isolated[to] {
		return true
	}
	if cut, _ := lookup(f.cuts, from, to); cut {
		return true
	}
	if f.groups != nil {
		group := func(id uint64) int {
			if g, ok := f.groups[id]; ok {
				return g
			}
			return -1 // the nodes no group names
		}
		return group(from) != group(to)
	}
	return false
}

// linkFaults is what applies to one message on a link.
type linkFaults struct {
	blocked  bool
	drop     float64
	dup      float64
	min, max time.Duration
}

func (n *Network) faultsFor(from, to uint64) linkFaults {
	n.mu.Lock()
	defer n.mu.Unlock()
	lf := linkFaults{blocked: n.f.blocked(from, to), dup: n.f.dup}
	lf.drop, _ = lookup(n.f.drop, from, to)
	d, _ := lookup(n.f.delay, from, to)
	lf.min, lf.max = d[0], d[1]
	return lf
}

func (n *Network) blocked(from, to uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.f.blocked(from, to)
}
