package golden

import (
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/clientcfg"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
	"github.com/kcd-project/kcd/internal/testenv"

	_ "github.com/kcd-project/kcd/daemon/connectors/all"
)

// TestIntegrationClientOverridesValidate validates FileStream connectors
// with producer and consumer overrides on real workers (the test
// environment's, policy All, and a fresh one with policy None) and on
// kcd's herder under the same policy: each override's value and errors
// (Kafka Connect's refusal message among them) and the error count must
// be the same. Definitions are not compared: Kafka Connect lists the
// Java client's ConfigKey of each override, kcd none.
func TestIntegrationClientOverridesValidate(t *testing.T) {
	allURL := testenv.Require(t, testenv.ConnectURL)
	noneURL := testenv.StartConnectWorker(t, map[string]string{clientcfg.PolicyKey: "None"})
	configs := []map[string]string{
		{"connector.class": "FileStreamSource", "topic": "t", "producer.override.compression.type": "zstd",
			"producer.override.linger.ms": "10", "consumer.override.fetch.min.bytes": "2"},
		{"connector.class": "FileStreamSink", "topics": "t", "consumer.override.max.poll.records": "100",
			"consumer.override.auto.offset.reset": "latest", "producer.override.acks": "1"},
	}
	herdertest.Register()
	for _, policy := range []clientcfg.Policy{clientcfg.PolicyAll, clientcfg.PolicyNone} {
		url := allURL
		if policy == clientcfg.PolicyNone {
			url = noneURL
		}
		h := herder.New(herdertest.Store(t), herder.Options{Logger: slog.New(slog.DiscardHandler),
			Clients: &herder.ClientSettings{Policy: policy}})
		for _, cfg := range configs {
			cfg["name"] = "client-overrides"
			class := cfg["connector.class"]
			status, body := call(t, "PUT", url+"/connector-plugins/"+class+"/config/validate", cfg)
			if status != 200 {
				t.Fatalf("%s %s: the worker answered %d %s", policy, class, status, body)
			}
			var want herder.ConfigInfos
			if err := json.Unmarshal(body, &want); err != nil {
				t.Fatal(err)
			}
			got, err := h.ValidateConfig(class, herder.ConfigOf(cfg))
			if err != nil {
				t.Fatal(err)
			}
			if want.ErrorCount != got.ErrorCount {
				t.Errorf("%s %s: %d errors, Kafka Connect %d", policy, class, got.ErrorCount, want.ErrorCount)
			}
			w, g := overrideValues(want), overrideValues(got)
			if !maps.Equal(w, g) {
				t.Errorf("%s %s: overrides\nKafka Connect %v\nkcd           %v", policy, class, w, g)
			}
			if policy == clientcfg.PolicyNone && !strings.Contains(strings.Join(slices.Collect(maps.Values(g)), ""), "The 'None' policy does not allow") {
				t.Errorf("%s %s: no refusal in %v", policy, class, g)
			}
			t.Logf("%s %s: %d overrides compared", policy, class, len(w))
		}
	}
}

// overrideValues maps each listed client override to its value and errors.
func overrideValues(ci herder.ConfigInfos) map[string]string {
	out := map[string]string{}
	for _, c := range ci.Configs {
		v := c.Value
		if !strings.Contains(v.Name, ".override.") {
			continue
		}
		val := "null"
		if v.Value != nil {
			val = *v.Value
		}
		b, _ := json.Marshal(v.Errors)
		out[v.Name] = val + " " + string(b)
	}
	return out
}
