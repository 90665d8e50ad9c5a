package herder

import (
	"context"
	"testing"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

// The herder deletes single sink offsets by key; its key must be the one
// connectstore writes.
func TestSinkOffsetKeyMatchesConnectstore(t *testing.T) {
	ctx := context.Background()
	s := herdertest.Store(t)
	for _, c := range []struct {
		name, topic string
		partition   int32
	}{{"plain", "t", 0}, {"a/b c", "weird/topic%", 7}} {
		if err := s.PutSinkOffsets(ctx, c.name, []connectstore.SinkOffset{{Topic: c.topic, Partition: c.partition, Offset: 1}}, nil); err != nil {
			t.Fatal(err)
		}
		key := sinkOffsetKey(c.name, c.topic, c.partition)
		if _, found, err := s.Raw().Get(ctx, key); err != nil || !found {
			t.Errorf("%+v: no key %s (%v)", c, key, err)
		}
		if n, tp, p, ok := connectstore.ParseSinkOffsetKey(key); !ok || n != c.name || tp != c.topic || p != c.partition {
			t.Errorf("%s parses as %q %q %d %v", key, n, tp, p, ok)
		}
	}
}

func TestVersionInRange(t *testing.T) {
	for _, c := range []struct {
		version, spec string
		ok            bool
	}{
		{"4.3.1", "4.3.1", true}, {"4.3.1", "4.3", false}, {"4.3.1", "[4.0,5.0)", true}, {"5.0", "[4.0,5.0)", false},
		{"5.0", "[4.0,5.0]", true}, {"4.0", "(4.0,5.0]", false}, {"4.10", "[4.9,)", true}, {"1.0", "(,1.0]", true},
		{"1.0", "[1.0]", true}, {"1.1", "[1.0]", false}, {"1.0", "[1.0", false},
	} {
		if _, ok := versionInRange(c.version, c.spec); ok != c.ok {
			t.Errorf("%s in %s: %v", c.version, c.spec, ok)
		}
	}
}
