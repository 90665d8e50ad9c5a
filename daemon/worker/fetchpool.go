package worker

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordSlabs is a kgo.PoolRecords: franz-go decodes each fetched record
// batch into one slab of Records, and takes it from here instead of
// allocating it once the records of an earlier slab were all recycled.
// Slabs are pooled by capacity, a power of two; sync.Pool lets the
// garbage collector take the idle ones.
type recordSlabs struct {
	byClass [maxSlabClass + 1]sync.Pool // class c: capacity 1<<c
}

// maxSlabClass bounds the slabs pooled: a record batch of more than
// 1<<maxSlabClass records gets a slab of its own.
const maxSlabClass = 16

// fetchedSlabs is the pool of every sink task's consumer.
var fetchedSlabs = &recordSlabs{}

func slabClass(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// GetRecords returns an empty slab of capacity at least n.
func (p *recordSlabs) GetRecords(n int) []kgo.Record {
	c := slabClass(n)
	if c > maxSlabClass {
		return make([]kgo.Record, 0, n)
	}
	if s, ok := p.byClass[c].Get().(*[]kgo.Record); ok {
		return (*s)[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

// PutRecords takes back a slab whose records franz-go zeroed.
func (p *recordSlabs) PutRecords(s []kgo.Record) {
	c := slabClass(cap(s))
	if c > maxSlabClass || cap(s) != 1<<c {
		return // not one of ours (grown by franz-go): left to the collector
	}
	p.byClass[c].Put(&s)
}

// recycle hands the fetched records back to their slabs: every record of
// the fetches, those not put too, once nothing refers to them. What the
// sink records were made of is not in the slabs: keys, values and header
// values point into the fetch responses, which are never reused.
func recycle(fetches kgo.Fetches) {
	for i := range fetches {
		for j := range fetches[i].Topics {
			for _, p := range fetches[i].Topics[j].Partitions {
				for _, r := range p.Records {
					r.Recycle()
				}
			}
		}
	}
}
