package herder_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/transforms"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

func newHerder(t *testing.T) *herder.Herder {
	t.Helper()
	herdertest.Register()
	return herder.New(herdertest.Store(t), herder.Options{Logger: slog.New(slog.DiscardHandler)})
}

func cfg(kv ...string) herder.Config {
	c := herder.Config{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		c[kv[i]] = &v
	}
	return c
}

// values maps each setting of infos to its value and errors.
func values(infos herder.ConfigInfos) map[string]*herder.ConfigValueInfo {
	out := map[string]*herder.ConfigValueInfo{}
	for _, c := range infos.Configs {
		out[c.Value.Name] = c.Value
	}
	return out
}

func names(infos herder.ConfigInfos) []string {
	var out []string
	for _, c := range infos.Configs {
		out = append(out, c.Value.Name)
	}
	return out
}

func TestValidateListsKafkaConnectSettingsThenTheConnectors(t *testing.T) {
	h := newHerder(t)
	infos, err := h.ValidateConfig("FakeSource", cfg("connector.class", "FakeSource"))
	if err != nil {
		t.Fatal(err)
	}
	wantGroups := []string{"Common", "Transforms", "Predicates", "Error Handling", "Topic Creation", "Exactly Once Support", "offsets.topic"}
	if !slices.Equal(infos.Groups, wantGroups) {
		t.Errorf("groups %v", infos.Groups)
	}
	wantNames := []string{"name", "connector.class", "connector.plugin.version", "tasks.max", "tasks.max.enforce",
		"key.converter", "key.converter.plugin.version", "value.converter", "value.converter.plugin.version",
		"header.converter", "header.converter.plugin.version", "transforms", "predicates", "config.action.reload",
		"errors.retry.timeout", "errors.retry.delay.max.ms", "errors.tolerance", "errors.log.enable", "errors.log.include.messages",
		"topic.creation.groups", "exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic",
		"file", "topic", "batch.size"}
	if got := names(infos); !slices.Equal(got, wantNames) {
		t.Errorf("settings\n got %v\nwant %v", got, wantNames)
	}
	if infos.Name != "FakeSource" || infos.ErrorCount != 2 {
		t.Errorf("name %q, %d errors", infos.Name, infos.ErrorCount)
	}
	v := values(infos)
	if e := v["name"].Errors; len(e) != 1 || e[0] != `Missing required configuration "name" which has no default value.` {
		t.Errorf("name errors %q", e)
	}
	if v["tasks.max"].Value == nil || *v["tasks.max"].Value != "1" {
		t.Errorf("tasks.max default %v", v["tasks.max"].Value)
	}
	if v["connector.plugin.version"].Value == nil || *v["connector.plugin.version"].Value != herdertest.PluginVersion {
		t.Errorf("plugin version %v", v["connector.plugin.version"].Value)
	}
	// Definitions as Kafka Connect shows them.
	for _, c := range infos.Configs {
		d := c.Definition
		switch d.Name {
		case "name":
			if !d.Required || d.DefaultValue != nil || *d.Group != "Common" || d.OrderInGroup != 1 || d.Width != "MEDIUM" || d.DisplayName != "Connector name" {
				t.Errorf("name definition %+v", d)
			}
		case "topic": // the connector's own, without a group
			if !d.Required || d.Group != nil || d.OrderInGroup != -1 || d.Width != "NONE" || d.DisplayName != "topic" || d.Dependents == nil {
				t.Errorf("topic definition %+v", d)
			}
		case "key.converter":
			if d.Type != "CLASS" || *d.DefaultValue != herder.JSONConverter {
				t.Errorf("key.converter definition %+v", d)
			}
		}
	}
}

func TestValidateParsesAsKafkaConnect(t *testing.T) {
	h := newHerder(t)
	in := cfg("connector.class", herdertest.SinkClass, "name", " n\x01b ", "topics", " a , b ", "tasks.max", "x",
		"errors.log.enable", "TRUE", "tasks.max.enforce", "maybe", "errors.tolerance", "ALL",
		"key.converter", "StringConverter", "value.converter", "nope.Converter", "transforms", "t1,t1")
	in["header.converter"] = nil
	in["unknown.setting"] = nil
	infos, err := h.ValidateConfig("FakeSinkConnector", in)
	if err != nil {
		t.Fatal(err)
	}
	v := values(infos)
	check := func(name string, value any, errs ...string) {
		t.Helper()
		got := v[name]
		if got == nil {
			t.Errorf("%s missing", name)
			return
		}
		if value == nil && got.Value != nil || value != nil && (got.Value == nil || *got.Value != value.(string)) {
			t.Errorf("%s value %v, want %v", name, got.Value, value)
		}
		if !slices.Equal(got.Errors, errs) {
			t.Errorf("%s errors\n got %q\nwant %q", name, got.Errors, errs)
		}
	}
	check("name", "n\x01b", "Invalid value n\x01b for configuration name: String may not contain control sequences but had the following ASCII chars: 1")
	check("topics", "a,b")
	check("tasks.max", nil, "Invalid value x for configuration tasks.max: Not a number of type INT",
		"Invalid value null for configuration tasks.max: Value must be non-null")
	check("errors.log.enable", "true")
	check("tasks.max.enforce", nil, "Invalid value maybe for configuration tasks.max.enforce: Expected value to be either true or false")
	check("errors.tolerance", "ALL", "Invalid value ALL for configuration errors.tolerance: String must be one of: none, all")
	check("key.converter", herder.StringConverter)
	check("value.converter", nil, "Invalid value nope.Converter for configuration value.converter: Class nope.Converter could not be found.")
	check("header.converter", nil, "Null value can not be supplied as the configuration value.")
	check("unknown.setting", nil, "Null value can not be supplied as the configuration value.")
	check("transforms", "t1,t1", "Invalid value [t1, t1] for configuration transforms: Duplicate alias provided.")
	check("transforms.t1.type", nil, `Missing required configuration "transforms.t1.type" which has no default value.`)
	if infos.Configs[0].Definition != nil || infos.Configs[0].Value.Name != "unknown.setting" {
		t.Errorf("a null setting nobody defines comes first, without a definition: %+v", infos.Configs[0])
	}
	if !slices.Contains(infos.Groups, "Transforms: t1") {
		t.Errorf("groups %v", infos.Groups)
	}
	want := 0
	for _, c := range infos.Configs {
		want += len(c.Value.Errors)
	}
	if infos.ErrorCount != want || want != 10 {
		t.Errorf("error_count %d, errors listed %d", infos.ErrorCount, want)
	}
}

func TestValidateSinkTopics(t *testing.T) {
	h := newHerder(t)
	for _, c := range []struct {
		in     herder.Config
		topics []string
		regex  []string
	}{
		{cfg(), []string{"Must configure one of topics or topics.regex"}, []string{"Must configure one of topics or topics.regex"}},
		{cfg("topics", "a", "topics.regex", "b.*"),
			[]string{"topics and topics.regex are mutually exclusive options, but both are set."},
			[]string{"topics and topics.regex are mutually exclusive options, but both are set."}},
		{cfg("topics", "a,dlq", "errors.deadletterqueue.topic.name", "dlq"),
			[]string{"The DLQ topic 'dlq' may not be included in the list of topics ('topics=[a, dlq]') consumed by the connector"}, nil},
		{cfg("topics.regex", "d.*", "errors.deadletterqueue.topic.name", "dlq"),
			nil, []string{"The DLQ topic 'dlq' may not be matched by the regex for the topics ('topics.regex=d.*') consumed by the connector"}},
		{cfg("topics.regex", "a("), nil, []string{"Invalid value a( for configuration topics.regex: Invalid regex: error parsing regexp: missing closing ): `a(`"}},
		{cfg("topics", "a,a"), []string{"Configuration 'topics' values must not be duplicated."}, nil},
	} {
		in := c.in
		in["connector.class"], in["name"] = ptr(herdertest.SinkClass), ptr("s")
		infos, err := h.ValidateConfig(herdertest.SinkClass, in)
		if err != nil {
			t.Fatal(err)
		}
		v := values(infos)
		if !slices.Equal(v["topics"].Errors, c.topics) && len(v["topics"].Errors)+len(c.topics) > 0 {
			t.Errorf("%v: topics errors %q", in.Strings(), v["topics"].Errors)
		}
		if !slices.Equal(v["topics.regex"].Errors, c.regex) && len(v["topics.regex"].Errors)+len(c.regex) > 0 {
			t.Errorf("%v: topics.regex errors %q", in.Strings(), v["topics.regex"].Errors)
		}
	}
}

func ptr(s string) *string { return &s }

func TestValidateFailures(t *testing.T) {
	h := newHerder(t)
	for _, c := range []struct {
		plugin string
		in     herder.Config
		msg    string
	}{
		{"FakeSource", cfg(), "Connector config {} contains no connector type"},
		{"FakeSink", cfg("connector.class", "FakeSource"), "Included connector type FakeSource does not match request type FakeSink"},
		{"x.FakeSource", cfg("connector.class", "FakeSource"), "Included connector type FakeSource does not match request type x.FakeSource"},
		{"Nope", cfg("connector.class", "Nope"), "Failed to find any class that implements Connector and which name matches Nope, available connectors are: "},
		// A built-in class is not the Java host's (there is none here).
		{"FakeSource", cfg("connector.class", "FakeSource", "kcd.runtime", "java"), "kcd.runtime=java: the Java connector host has no connector class FakeSource"},
		{"FakeSource", cfg("connector.class", "FakeSource", "kcd.runtime", "jvm"), `kcd.runtime "jvm" is not one of go, java`},
	} {
		_, err := h.ValidateConfig(c.plugin, c.in)
		if !errors.Is(err, herder.ErrBadRequest) || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%s %v: %v", c.plugin, c.in.Strings(), err)
		}
	}
	// The path's plugin may omit "Connector", and so may the class.
	if _, err := h.ValidateConfig("FakeSourceConnector", cfg("connector.class", herdertest.SourceClass)); err != nil {
		t.Error(err)
	}
}

func TestValidateConnectorChecksAndVersions(t *testing.T) {
	h := newHerder(t)
	infos, _ := h.ValidateConfig("CheckedSource", cfg("connector.class", "CheckedSource", "name", "c", "topic", "t",
		"file", "/forbidden", "batch.size", "0", "connector.plugin.version", "9.9"))
	v := values(infos)
	if !slices.Equal(v["file"].Errors, []string{"file /forbidden is not allowed"}) {
		t.Errorf("file errors %q", v["file"].Errors)
	}
	if !slices.Equal(v["batch.size"].Errors, []string{"Invalid value 0 for configuration batch.size: Value must be at least 1"}) {
		t.Errorf("batch.size errors %q", v["batch.size"].Errors)
	}
	want := "Plugin " + herdertest.CheckedClass + " not found that matches the version range [9.9,9.9], available versions: [1.2.3]"
	if !slices.Equal(v["connector.plugin.version"].Errors, []string{want}) || !slices.Equal(v["connector.class"].Errors, []string{want}) {
		t.Errorf("version errors %q %q", v["connector.plugin.version"].Errors, v["connector.class"].Errors)
	}
	infos, _ = h.ValidateConfig("CheckedSource", cfg("connector.class", "CheckedSource", "name", "c", "topic", "t", "connector.plugin.version", "[1.0,2.0)"))
	if infos.ErrorCount != 0 {
		t.Errorf("a range holding the version: %d errors", infos.ErrorCount)
	}
}

func TestPlugins(t *testing.T) {
	h := newHerder(t)
	conns := h.Plugins(true)
	if !slices.ContainsFunc(conns, func(p herder.PluginInfo) bool {
		return p.Class == herdertest.SinkClass && p.Type == herder.PluginSink && p.Version == herdertest.PluginVersion
	}) {
		t.Errorf("connectors %+v", conns)
	}
	all := h.Plugins(false)
	if !slices.ContainsFunc(all, func(p herder.PluginInfo) bool {
		return p.Class == herder.SimpleHeaderConverter && p.Type == herder.PluginHeaderConverter
	}) || len(all) != len(conns)+len(herder.DefaultConverters)+len(herder.DefaultHeaderConverters)+len(transforms.Transformations())+len(transforms.Predicates()) {
		t.Errorf("all plugins %+v", all)
	}

	keys, err := h.PluginConfig("FakeSource", "")
	if err != nil || keys[0].Name != "file" || keys[3].Name != "name" || len(keys) != 3+24 {
		t.Errorf("plugin config %v %+v", err, keys)
	}
	if keys, err := h.PluginConfig(herder.StringConverter, ""); err != nil || len(keys) != 0 {
		t.Errorf("converter config %v %v", keys, err)
	}
	if _, err := h.PluginConfig("Nope", ""); !errors.Is(err, herder.ErrNotFound) || err.Error() != "Unknown plugin Nope." {
		t.Errorf("unknown plugin: %v", err)
	}
	if _, err := h.PluginConfig("FakeSource", "2.0"); !errors.Is(err, herder.ErrBadRequest) ||
		err.Error() != "Plugin "+herdertest.SourceClass+" not found that matches the version range [2.0,2.0], available versions: [1.2.3]" {
		t.Errorf("wrong version: %v", err)
	}
}

func TestValidateConverters(t *testing.T) {
	herdertest.Register()
	h := herder.New(herdertest.Store(t), herder.Options{
		Logger: slog.New(slog.DiscardHandler),
		ConverterConfig: func(class string) connect.ConfigDef {
			if class != herder.StringConverter {
				return nil
			}
			return connect.ConfigDef{
				{Name: "converter.type", Type: connect.TypeString, Importance: connect.Low, Documentation: "How this converter will be used."},
				{Name: "converter.encoding", Type: connect.TypeString, Default: connect.Default("UTF-8"), Importance: connect.High, DisplayName: "Encoding"},
			}
		},
	})
	in := cfg("connector.class", "FakeSource", "name", "n", "topic", "t", "key.converter", "String", "value.converter", "com.example.Nope")
	in["header.converter"] = nil
	infos, err := h.ValidateConfig("FakeSource", in)
	if err != nil {
		t.Fatal(err)
	}
	v := values(infos)
	if got := names(infos); !slices.Equal(got[len(got)-2:], []string{"key.converter.converter.type", "key.converter.converter.encoding"}) {
		t.Errorf("converter settings are not listed last: %v", got)
	}
	if s := v["key.converter.converter.type"]; s.Value == nil || *s.Value != "key" || len(s.Errors) != 0 {
		t.Errorf("converter.type %+v", s)
	}
	if s := v["key.converter"]; *s.Value != herder.StringConverter {
		t.Errorf("key.converter %v", *s.Value)
	}
	// A converter's version is offered only for a class that resolves.
	if s := v["key.converter.plugin.version"]; !s.Visible || len(s.RecommendedValues) != 1 || s.Value == nil {
		t.Errorf("key version %+v", s)
	}
	if s := v["value.converter.plugin.version"]; s.Visible || len(s.RecommendedValues) != 0 || s.Value != nil {
		t.Errorf("value version %+v", s)
	}
	if s := v["header.converter.plugin.version"]; s.Visible || len(s.RecommendedValues) != 0 || s.Value == nil {
		t.Errorf("header version %+v", s)
	}
	// Only described (GET .../config), the converters have no default.
	keys, _ := h.PluginConfig("FakeSource", "")
	for _, k := range keys {
		if strings.Contains(k.Name, "converter") && k.DefaultValue != nil {
			t.Errorf("%s default %q", k.Name, *k.DefaultValue)
		}
	}
	// converter.type is not stored.
	s := herdertest.Store(t)
	h2 := herder.New(s, herder.Options{Logger: slog.New(slog.DiscardHandler)})
	if _, err := h2.CreateConnector(t.Context(), "n", cfg("connector.class", "FakeSource", "name", "n", "topic", "t", "key.converter", "String"), "STARTED"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h2.Config(t.Context(), "n"); len(got) != 4 {
		t.Errorf("stored %v", got)
	}
}

// A value that holds a config provider reference is resolved on the worker
// only: validate neither parses nor checks it, and shows it as written.
func TestValidateReferences(t *testing.T) {
	h := newHerder(t)
	in := cfg("connector.class", herdertest.SinkClass, "name", "n", "topics", "a",
		"tasks.max", "${env:KCD_TASKS}", "errors.tolerance", "${file:/etc/kcd/c.properties:tolerance}")
	infos, err := h.ValidateConfig("FakeSinkConnector", in)
	if err != nil {
		t.Fatal(err)
	}
	v := values(infos)
	for name, want := range map[string]string{"tasks.max": "${env:KCD_TASKS}", "errors.tolerance": "${file:/etc/kcd/c.properties:tolerance}"} {
		got := v[name]
		if got == nil || got.Value == nil || *got.Value != want || len(got.Errors) != 0 {
			t.Errorf("%s: %+v, want the reference and no error", name, got)
		}
	}
}

func TestTransformPlugins(t *testing.T) {
	h := newHerder(t)
	all := h.Plugins(false)
	if !slices.ContainsFunc(all, func(p herder.PluginInfo) bool {
		return p.Class == "org.apache.kafka.connect.transforms.Cast$Value" && p.Type == herder.PluginTransformation && p.Version == transforms.Version
	}) || !slices.ContainsFunc(all, func(p herder.PluginInfo) bool {
		return p.Class == "org.apache.kafka.connect.transforms.predicates.HasHeaderKey" && p.Type == herder.PluginPredicate
	}) {
		t.Errorf("plugins lack kcd's transforms: %+v", all)
	}
	keys, err := h.PluginConfig("org.apache.kafka.connect.transforms.Cast$Value", "")
	if err != nil || !slices.ContainsFunc(keys, func(k herder.ConfigKeyInfo) bool { return k.Name == "spec" }) {
		t.Errorf("config of Cast$Value: %+v %v", keys, err)
	}
	infos, _ := h.ValidateConfig(herdertest.SourceClass, cfg("connector.class", herdertest.SourceClass, "name", "c", "topic", "t",
		"transforms", "c", "transforms.c.type", "org.apache.kafka.connect.transforms.Cast$Value", "transforms.c.spec", "a:bytes"))
	var found []string
	for _, c := range infos.Configs {
		if c.Value.Name == "transforms.c.spec" {
			found = c.Value.Errors
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "Cast transformation does not support casting to BYTES") {
		t.Errorf("errors of transforms.c.spec: %q", found)
	}
}
