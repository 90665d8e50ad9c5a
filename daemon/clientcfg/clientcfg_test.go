package clientcfg

import (
	"strings"
	"testing"
	"time"
)

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"":          PolicyAll,
		"All":       PolicyAll,
		" None ":    PolicyNone,
		"Principal": PolicyPrincipal,
		"org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy":      PolicyNone,
		"org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy": PolicyPrincipal,
		"AllConnectorClientConfigOverridePolicy":                                                 PolicyAll,
	} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"all", "Allowlist", "org.example.MyPolicy"} {
		if _, err := ParsePolicy(in); err == nil {
			t.Errorf("ParsePolicy(%q) succeeded", in)
		}
	}
}

func TestPolicyAllows(t *testing.T) {
	cases := []struct {
		p    Policy
		name string
		want bool
	}{
		{PolicyAll, "compression.type", true},
		{PolicyNone, "compression.type", false},
		{PolicyNone, "sasl.jaas.config", false},
		{PolicyPrincipal, "sasl.jaas.config", true},
		{PolicyPrincipal, "security.protocol", true},
		{PolicyPrincipal, "sasl.mechanism", true},
		{PolicyPrincipal, "compression.type", false},
	}
	for _, c := range cases {
		if got := c.p.Allows(c.name); got != c.want {
			t.Errorf("%s.Allows(%s) = %v", c.p, c.name, got)
		}
	}
	want := "The 'None' policy does not allow 'linger.ms' to be overridden in the connector configuration."
	if got := PolicyNone.Refusal("linger.ms"); got != want {
		t.Errorf("Refusal = %q, want %q", got, want)
	}
}

func TestProducerMapping(t *testing.T) {
	d := DefaultProducer()
	// Kafka Connect's: compression none, linger 5 ms (the 4.x producer),
	// acks=all, one request in flight, no idempotence.
	if d.Compression != "none" || d.Linger != 5*time.Millisecond || d.Acks != -1 || d.MaxInFlight != 1 || d.Idempotent ||
		d.MaxRequestSize != 1<<20 || d.BufferMemory != 32<<20 || d.RequestTimeout != 30*time.Second {
		t.Fatalf("defaults: %+v", d)
	}
	p, err := d.With(map[string]string{
		"compression.type": "ZSTD", "linger.ms": "20", "batch.size": "65536", "acks": "1",
		"max.in.flight.requests.per.connection": "5", "enable.idempotence": "false", "request.timeout.ms": "1000",
		"delivery.timeout.ms": "120000", "max.request.size": "2097152", "buffer.memory": "1048576", "client.id": "me",
	}, ProducerPrefix)
	if err != nil {
		t.Fatal(err)
	}
	want := Producer{Compression: "zstd", Linger: 20 * time.Millisecond, BatchBytes: 65536, MaxRequestSize: 2 << 20, Acks: 1,
		MaxInFlight: 5, RequestTimeout: time.Second, DeliveryTimeout: 2 * time.Minute, BufferMemory: 1 << 20, ClientID: "me"}
	if p != want {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
	if err := p.Check("producer.", false); err != nil {
		t.Fatal(err)
	}
	for _, acks := range []string{"all", "-1"} {
		if p, _ := d.With(map[string]string{"acks": acks}, ProducerPrefix); p.Acks != -1 {
			t.Errorf("acks=%s: %d", acks, p.Acks)
		}
	}
	if n := len(d.Opts(false)); n != 8 {
		t.Errorf("non-idempotent producer: %d options, want 8 (with DisableIdempotentWrite and max in flight)", n)
	}
	if n := len(d.Opts(true)); n != 6 {
		t.Errorf("transactional producer: %d options, want 6", n)
	}
}

func TestProducerRefused(t *testing.T) {
	d := DefaultProducer()
	for k, v := range map[string]string{
		"compression.type": "brotli", "linger.ms": "-1", "batch.size": "10", "acks": "2",
		"max.in.flight.requests.per.connection": "0", "enable.idempotence": "yes", "buffer.memory": "100",
	} {
		if _, err := d.With(map[string]string{k: v}, ProducerPrefix); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	for _, k := range []string{"retries", "partitioner.class", "transactional.id"} {
		if err := CheckProducer(ProducerOverridePrefix, k, "1"); err == nil || !strings.Contains(err.Error(), "producer.override."+k+" is not supported by kcd") {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range []string{"bootstrap.servers", "sasl.jaas.config", "ssl.truststore.location", "security.protocol"} {
		err := CheckProducer(ProducerPrefix, k, "secret-value")
		if err == nil || !strings.Contains(err.Error(), "kcd's own") || strings.Contains(err.Error(), "secret-value") {
			t.Errorf("%s: %v", k, err)
		}
	}
	// Together: transactions need acks=all; idempotence at most 5 in flight.
	p, _ := d.With(map[string]string{"acks": "1"}, ProducerPrefix)
	if err := p.Check("producer.", true); err == nil || !strings.Contains(err.Error(), "acks must be all") {
		t.Errorf("acks=1 transactional: %v", err)
	}
	if err := p.Check("producer.", false); err != nil {
		t.Errorf("acks=1 without transactions: %v", err)
	}
	p, _ = d.With(map[string]string{"enable.idempotence": "true", "acks": "0"}, ProducerPrefix)
	if err := p.Check("producer.", false); err == nil {
		t.Error("idempotence with acks=0 accepted")
	}
	p, _ = d.With(map[string]string{"max.in.flight.requests.per.connection": "6"}, ProducerPrefix)
	if err := p.Check("producer.", true); err == nil {
		t.Error("6 in flight transactional accepted")
	}
	p, _ = d.With(map[string]string{"batch.size": "2097152"}, ProducerPrefix)
	if err := p.Check("producer.", false); err == nil {
		t.Error("batch.size above max.request.size accepted")
	}
}

func TestConsumerMapping(t *testing.T) {
	c, err := DefaultConsumer().With(map[string]string{
		"fetch.min.bytes": "1024", "fetch.max.bytes": "4194304", "max.partition.fetch.bytes": "524288",
		"fetch.max.wait.ms": "100", "max.poll.records": "2000", "isolation.level": "READ_UNCOMMITTED",
		"auto.offset.reset": "latest", "group.id": "g", "client.id": "c", "enable.auto.commit": "false",
		// Group membership settings: accepted, ignored.
		"session.timeout.ms": "45000", "heartbeat.interval.ms": "3000", "max.poll.interval.ms": "1",
	}, ConsumerOverridePrefix)
	if err != nil {
		t.Fatal(err)
	}
	want := Consumer{FetchMinBytes: 1024, FetchMaxBytes: 4 << 20, MaxPartitionFetchBytes: 512 << 10, FetchMaxWait: 100 * time.Millisecond,
		MaxPollRecords: 2000, IsolationLevel: "read_uncommitted", AutoOffsetReset: "latest", GroupID: "g", ClientID: "c"}
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	for k, v := range map[string]string{
		"enable.auto.commit": "true", "auto.offset.reset": "none", "isolation.level": "x", "max.poll.records": "0",
		"fetch.max.bytes": "-1", "key.deserializer": "x", "ssl.keystore.password": "x",
	} {
		if err := CheckConsumer(ConsumerOverridePrefix, k, v); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}

func TestWithPrefix(t *testing.T) {
	got := WithPrefix(map[string]string{"producer.override.acks": "1", "producer.override.": "x", "producer.acks": "0", "name": "n"}, ProducerOverridePrefix)
	if len(got) != 1 || got["acks"] != "1" {
		t.Fatalf("%v", got)
	}
}
