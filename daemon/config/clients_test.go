package config

import (
	"maps"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Producer and consumer settings come from the file, the environment and
// repeated flags, merged key by key, later sources winning.
func TestClientSettingsSources(t *testing.T) {
	path := writeFile(t, `
bootstrap-servers: [a:9092]
producer:
  compression.type: gzip
  linger.ms: "20"
consumer:
  max.poll.records: "1000"
connector-client-config-override-policy: org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy
`)
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	flags := RegisterFlags(fs, Default())
	if err := fs.Parse([]string{"--producer", "compression.type=zstd", "--producer", "client.id=a,b", "--consumer", "fetch.max.wait.ms=100"}); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"KCD_PRODUCER": "linger.ms=30,acks=all", "KCD_CONSUMER": "fetch.min.bytes=10"})
	c, err := Load(path, env, flags)
	if err != nil {
		t.Fatal(err)
	}
	wantP := map[string]string{"compression.type": "zstd", "linger.ms": "30", "acks": "all", "client.id": "a,b"}
	wantC := map[string]string{"max.poll.records": "1000", "fetch.min.bytes": "10", "fetch.max.wait.ms": "100"}
	if !maps.Equal(c.Producer, wantP) || !maps.Equal(c.Consumer, wantC) {
		t.Errorf("producer %v\nconsumer %v", c.Producer, c.Consumer)
	}
	if !strings.HasPrefix(c.ClientConfigOverridePolicy, "org.apache") {
		t.Errorf("policy %q", c.ClientConfigOverridePolicy)
	}
	if Default().ClientConfigOverridePolicy != "All" {
		t.Errorf("default policy %q", Default().ClientConfigOverridePolicy)
	}
}

func TestClientSettingsRefused(t *testing.T) {
	cases := map[string]string{
		"producer:\n  retries: \"3\"":                              "producer.retries is not supported by kcd",
		"producer:\n  sasl.jaas.config: hunter2":                   "kcd's own",
		"producer:\n  compression.type: brotli":                    "producer.compression.type",
		"producer:\n  acks: \"1\"":                                 "acks must be all", // transactions by default
		"consumer:\n  group.id: g":                                 "consumer.group.id would put",
		"connector-client-config-override-policy: Some":            "connector-client-config-override-policy",
		"consumer:\n  session.timeout.ms: \"45000\"\nproducer: {}": "",
	}
	for body, want := range cases {
		path := writeFile(t, "bootstrap-servers: [a:9092]\n"+body+"\n")
		_, err := Load(path, envOf(nil), nil)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", body, err, want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("secret shown: %v", err)
		}
	}
	path := writeFile(t, "bootstrap-servers: [a:9092]\nexactly-once-source-support: disabled\nproducer:\n  acks: \"1\"\n")
	if _, err := Load(path, envOf(nil), nil); err != nil {
		t.Errorf("acks=1 without transactions: %v", err)
	}
	if _, err := Load("", envOf(map[string]string{"KCD_BOOTSTRAP_SERVERS": "a:1", "KCD_PRODUCER": "sasl.jaas.config=hunter2"}), nil); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("env: %v", err)
	}
}

// Unquoted YAML numbers and booleans are read as the settings' text.
func TestClientSettingsYAMLNumbers(t *testing.T) {
	path := writeFile(t, "bootstrap-servers: [a:9092]\nproducer:\n  linger.ms: 20\n  enable.idempotence: true\n")
	c, err := Load(path, envOf(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Producer["linger.ms"] != "20" || c.Producer["enable.idempotence"] != "true" {
		t.Errorf("%v", c.Producer)
	}
}
