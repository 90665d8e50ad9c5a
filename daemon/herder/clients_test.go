package herder_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

func herderWith(t *testing.T, cs *herder.ClientSettings) *herder.Herder {
	t.Helper()
	herdertest.Register()
	return herder.New(herdertest.Store(t), herder.Options{Logger: slog.New(slog.DiscardHandler), Clients: cs})
}

// Validate lists a source's producer overrides and a sink's consumer
// overrides, each with the policy's refusal (Kafka Connect's message) or
// kcd's, as a per-field error.
func TestValidateClientOverrides(t *testing.T) {
	h := herderWith(t, nil) // policy All
	infos, err := h.ValidateConfig("FakeSource", cfg("connector.class", "FakeSource",
		"producer.override.compression.type", "zstd", "producer.override.retries", "3",
		"consumer.override.whatever", "1", "admin.override.x", "1"))
	if err != nil {
		t.Fatal(err)
	}
	v := values(infos)
	if c := v["producer.override.compression.type"]; c == nil || len(c.Errors) != 0 || *c.Value != "zstd" {
		t.Errorf("compression.type: %+v", c)
	}
	if c := v["producer.override.retries"]; c == nil || len(c.Errors) != 1 || !strings.Contains(c.Errors[0], "producer.override.retries is not supported by kcd") {
		t.Errorf("retries: %+v", c)
	}
	// As Kafka Connect: a source's consumer and admin overrides are not
	// validated.
	if v["consumer.override.whatever"] != nil || v["admin.override.x"] != nil {
		t.Errorf("a source lists consumer or admin overrides: %v", names(infos))
	}
	base, _ := h.ValidateConfig("FakeSource", cfg("connector.class", "FakeSource"))
	if infos.ErrorCount != base.ErrorCount+1 {
		t.Errorf("error count %d, without overrides %d", infos.ErrorCount, base.ErrorCount)
	}

	infos, _ = h.ValidateConfig("FakeSource", cfg("connector.class", "FakeSource", "producer.override.acks", "1"))
	if c := values(infos)["producer.override.acks"]; c == nil || len(c.Errors) != 1 || !strings.Contains(c.Errors[0], "acks must be all") {
		t.Errorf("acks=1 under exactly-once: %+v", c)
	}

	h = herderWith(t, &herder.ClientSettings{Policy: clientcfg.PolicyNone})
	infos, _ = h.ValidateConfig("FakeSink", cfg("connector.class", "FakeSink", "topics", "t",
		"consumer.override.max.poll.records", "5", "producer.override.linger.ms", "1"))
	c := values(infos)["consumer.override.max.poll.records"]
	want := "The 'None' policy does not allow 'max.poll.records' to be overridden in the connector configuration."
	if c == nil || !slices.Equal(c.Errors, []string{want}) {
		t.Errorf("policy None: %+v", c)
	}
	if values(infos)["producer.override.linger.ms"] != nil {
		t.Error("a sink lists producer overrides")
	}

	h = herderWith(t, &herder.ClientSettings{Policy: clientcfg.PolicyPrincipal, NotTransactional: true})
	infos, _ = h.ValidateConfig("FakeSource", cfg("connector.class", "FakeSource",
		"producer.override.sasl.jaas.config", "secret", "producer.override.acks", "1", "producer.override.linger.ms", "1"))
	v = values(infos)
	if c := v["producer.override.sasl.jaas.config"]; c == nil || len(c.Errors) != 1 || !strings.Contains(c.Errors[0], "kcd's own") {
		t.Errorf("Principal, sasl.jaas.config: %+v", c)
	}
	if c := v["producer.override.acks"]; c == nil || len(c.Errors) != 1 || !strings.Contains(c.Errors[0], "'Principal' policy does not allow 'acks'") {
		t.Errorf("Principal, acks: %+v", c)
	}
}
