package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/connect"
)

// A connector's overrides apply over the worker's producer.* and
// consumer.* settings; a source whose producer settings differ from the
// worker's gets a producer of its own.
func TestClientOverrides(t *testing.T) {
	cfg := Default()
	cfg.Store, cfg.Seeds = openStore(t), []string{"x:1"}
	cfg.Producer = map[string]string{"compression.type": "lz4", "linger.ms": "7"}
	cfg.Consumer = map[string]string{"max.poll.records": "50", "session.timeout.ms": "10000"}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.producer.Compression != "lz4" || cfg.producer.Linger != 7*time.Millisecond || cfg.consumer.MaxPollRecords != 50 {
		t.Fatalf("worker settings: %+v %+v", cfg.producer, cfg.consumer)
	}

	s, err := parseSettingsFor("c", map[string]string{}, cfg, connect.PluginSource)
	if err != nil || s.ownProducer || s.producer.Compression != "lz4" {
		t.Fatalf("no overrides: %+v, %v", s.producer, err)
	}
	s, err = parseSettingsFor("c", map[string]string{"producer.override.compression.type": "zstd", "consumer.override.bogus": "x"}, cfg, connect.PluginSource)
	if err != nil || !s.ownProducer || s.producer.Compression != "zstd" || s.producer.Linger != 7*time.Millisecond {
		t.Fatalf("override: %+v, %v", s.producer, err)
	}
	s, _ = parseSettingsFor("c", map[string]string{"producer.override.buffer.memory": "65536"}, cfg, connect.PluginSource)
	if s.ownProducer || s.producer.BufferMemory != 65536 {
		t.Errorf("buffer.memory alone: own producer %v, %d", s.ownProducer, s.producer.BufferMemory)
	}
	// The same value as the worker's: the shared producer does.
	s, _ = parseSettingsFor("c", map[string]string{"producer.override.compression.type": "lz4"}, cfg, connect.PluginSource)
	if s.ownProducer {
		t.Error("an override equal to the worker's setting asks for an own producer")
	}

	s, err = parseSettingsFor("c", map[string]string{"consumer.override.max.poll.records": "7", "consumer.override.auto.offset.reset": "latest",
		"consumer.override.group.id": "g", "producer.override.bogus": "x"}, cfg, connect.PluginSink)
	if err != nil || s.maxPoll != 7 || !s.resetLatest || s.groupID != "g" {
		t.Fatalf("sink: %+v, %v", s, err)
	}
	if s, _ := parseSettingsFor("c", nil, cfg, connect.PluginSink); s.maxPoll != 50 || s.groupID != "connect-c" {
		t.Errorf("sink defaults: maxPoll %d group %s", s.maxPoll, s.groupID)
	}

	cfg.OverridePolicy = clientcfg.PolicyNone
	_, err = parseSettingsFor("c", map[string]string{"producer.override.linger.ms": "1"}, cfg, connect.PluginSource)
	if err == nil || !strings.Contains(err.Error(), "The 'None' policy does not allow 'linger.ms' to be overridden in the connector configuration.") {
		t.Errorf("policy None: %v", err)
	}
	_, err = parseSettingsFor("c", map[string]string{"producer.override.retries": "1"}, Default(), connect.PluginSource)
	if err == nil || !strings.Contains(err.Error(), "producer.override.retries is not supported") {
		t.Errorf("unsupported: %v", err)
	}
	_, err = parseSettingsFor("c", map[string]string{"producer.override.acks": "1"}, Default(), connect.PluginSource)
	if err == nil || !strings.Contains(err.Error(), "producer.override.acks must be all") {
		t.Errorf("acks=1 transactional: %v", err)
	}
}

func TestWorkerClientSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		producer, consumer map[string]string
		policy             clientcfg.Policy
		want               string
	}{
		{producer: map[string]string{"retries": "1"}, want: "producer.retries is not supported"},
		{producer: map[string]string{"acks": "0"}, want: "producer.acks must be all"},
		{consumer: map[string]string{"group.id": "g"}, want: "consumer.group.id"},
		{policy: "Some", want: "not one of None, Principal, All"},
	} {
		_, err := New(Config{Store: openStore(t), Seeds: []string{"x:1"}, Producer: c.producer, Consumer: c.consumer, OverridePolicy: c.policy})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// buffer.memory lowers a source task's in-flight byte limit, never raises
// it above task-in-flight-bytes; the worker's limits stay as they are.
func TestBufferMemoryBoundsTaskBudget(t *testing.T) {
	e := fakeEnv(t)
	low, high := e.name("low"), e.name("high")
	e.create(low, map[string]string{"connector.class": "FileStreamSource", "file": "/dev/null", "topic": e.name("t"),
		"producer.override.buffer.memory": "131072"})
	e.create(high, map[string]string{"connector.class": "FileStreamSource", "file": "/dev/null", "topic": e.name("t"),
		"producer.override.buffer.memory": "1073741824"})
	w := e.start(func(c *Config) { c.Producer = map[string]string{"buffer.memory": "262144"} })
	for name, want := range map[string]int64{low: 128 << 10, high: 32 << 20} {
		var got int64
		waitFor(t, 10*time.Second, name+" task running", func() (bool, string) {
			ts := w.taskStats(name, 0)
			if ts == nil || ts.budget == nil {
				return false, "no task"
			}
			got = ts.budget.maxBytes
			return true, ""
		})
		if got != want {
			t.Errorf("%s: task in-flight bytes %d, want %d", name, got, want)
		}
	}
	if w.budget.maxBytes != 32<<20 {
		t.Errorf("worker budget %d", w.budget.maxBytes)
	}
}

// The producer the source tasks share is idempotent (up to five requests in
// flight, partitions in order) unless the worker's settings say how many
// requests may be in flight, whether to be idempotent, or acks other than
// all: one request in flight for every task together would serialize them.
func TestSharedProducerIdempotentUnlessSet(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		idem bool
	}{
		{nil, true},
		{map[string]string{"compression.type": "lz4"}, true},
		{map[string]string{"max.in.flight.requests.per.connection": "1"}, false},
		{map[string]string{"enable.idempotence": "false"}, false},
		{map[string]string{"enable.idempotence": "true"}, true},
		{map[string]string{"acks": "1"}, false},
	} {
		cfg := Default()
		cfg.Store, cfg.Seeds = openStore(t), []string{"x:1"}
		cfg.Producer, cfg.ExactlyOnceSource = c.set, ExactlyOnceDisabled // the shared producer runs without it
		cfg, err := cfg.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		w := &Worker{cfg: cfg}
		if got := w.sharedProducer().Idempotent; got != c.idem {
			t.Errorf("worker producer settings %v: shared producer idempotent %v, want %v", c.set, got, c.idem)
		}
		if cfg.producer.Idempotent != (c.set["enable.idempotence"] == "true") {
			t.Errorf("%v: the worker's own settings changed: %+v", c.set, cfg.producer)
		}
	}
}
