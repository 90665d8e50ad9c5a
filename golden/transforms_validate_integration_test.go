package golden

import (
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect/transforms"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
	"github.com/kcd-project/kcd/internal/testenv"

	_ "github.com/kcd-project/kcd/daemon/connectors/all"
)

// TestIntegrationTransformsValidate validates connector configs naming
// every transformation and predicate, with good, bad and missing settings,
// on the real worker and on kcd's herder: the settings of each alias
// (definition, value, errors) must be the same, but for the text of
// regular expression errors (Java's and Go's parsers word them apart).
func TestIntegrationTransformsValidate(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	tr := func(alias, class string, kv ...string) []string {
		out := []string{"transforms." + alias + ".type", tp + class}
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, "transforms."+alias+"."+kv[i], kv[i+1])
		}
		return out
	}
	configs := [][][]string{
		{ // good settings
			tr("a", "InsertField$Value", "topic.field", "t", "static.field", "s", "static.value", "v"),
			tr("b", "ReplaceField$Key", "renames", "a:b", "include", "a,b"),
			tr("c", "ValueToKey", "fields", "x"),
			tr("d", "ExtractField$Value", "field", "a.b", "field.syntax.version", "V2"),
			tr("e", "HoistField$Key", "field", "k"),
			tr("f", "Flatten$Value", "delimiter", "_"),
			tr("g", "TimestampConverter$Value", "target.type", "string", "format", "yyyy", "unix.precision", "seconds"),
			tr("h", "TimestampRouter", "timestamp.format", "yyyy-MM"),
			tr("i", "RegexRouter", "regex", "(.*)", "replacement", "x$1"),
			tr("j", "SetSchemaMetadata$Value", "schema.version", "3"),
			tr("k", "HeaderFrom$Value", "operation", "copy", "fields", "a", "headers", "b"),
			tr("l", "InsertHeader", "header", "h", "value.literal", "1"),
			tr("m", "DropHeaders", "headers", "h"),
			tr("n", "Filter", "predicate", "p1", "negate", "true"),
			tr("o", "MaskField$Key", "fields", "a", "replacement", "x"),
			tr("p", "Cast$Key", "spec", "a:int8"),
			{"predicates", "p1,p2,p3", "predicates.p1.type", tp + "predicates.TopicNameMatches", "predicates.p1.pattern", "a.*",
				"predicates.p2.type", tp + "predicates.HasHeaderKey", "predicates.p2.name", "h",
				"predicates.p3.type", tp + "predicates.RecordIsTombstone"},
		},
		{ // bad settings
			tr("a", "InsertField$Value", "topic.field", "t"),
			tr("b", "ReplaceField$Key", "renames", "a:b:c"),
			tr("d", "ExtractField$Value", "field.syntax.version", "v3"),
			tr("g", "TimestampConverter$Value", "target.type", "week", "unix.precision", "days"),
			tr("j", "SetSchemaMetadata$Value", "schema.version", "x"),
			tr("k", "HeaderFrom$Value", "operation", "cut"),
			tr("n", "Filter", "negate", "true"),
			tr("o", "MaskField$Key", "fields", "", "replacement", ""),
			tr("p", "Cast$Key", "spec", "a:int8,b:foo"),
			tr("q", "Cast$Value", "spec", "a:bytes"),
		},
		{ // missing settings
			tr("a", "InsertField$Value"),
			tr("d", "ExtractField$Value"),
			tr("e", "HoistField$Key"),
			tr("g", "TimestampConverter$Value"),
			tr("i", "RegexRouter"),
			tr("k", "HeaderFrom$Value"),
			tr("l", "InsertHeader"),
			tr("m", "DropHeaders"),
			tr("o", "MaskField$Key"),
			tr("p", "Cast$Key"),
			{"predicates", "p1,p2", "predicates.p1.type", tp + "predicates.TopicNameMatches", "predicates.p2.type", tp + "predicates.HasHeaderKey"},
		},
	}
	herdertest.Register()
	h := herder.New(herdertest.Store(t), herder.Options{Logger: slog.New(slog.DiscardHandler)})
	for n, parts := range configs {
		cfg := map[string]string{"connector.class": "FileStreamSource", "name": "smt-validate", "topic": "t"}
		var aliases []string
		for _, p := range parts {
			for i := 0; i+1 < len(p); i += 2 {
				cfg[p[i]] = p[i+1]
				if a, ok := strings.CutSuffix(strings.TrimPrefix(p[i], "transforms."), ".type"); ok && strings.HasPrefix(p[i], "transforms.") && !strings.Contains(a, ".") {
					aliases = append(aliases, a)
				}
			}
		}
		cfg["transforms"] = strings.Join(aliases, ",")
		status, body := call(t, "PUT", connectURL+"/connector-plugins/FileStreamSource/config/validate", cfg)
		if status != 200 {
			t.Fatalf("config %d: the worker answered %d %s", n, status, body)
		}
		var want herder.ConfigInfos
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		hc := herder.Config{}
		for k, v := range cfg {
			hc[k] = &v
		}
		got, err := h.ValidateConfig("FileStreamSource", hc)
		if err != nil {
			t.Fatal(err)
		}
		if want.ErrorCount != got.ErrorCount {
			t.Errorf("config %d: %d errors, Kafka Connect %d", n, got.ErrorCount, want.ErrorCount)
		}
		pick := func(ci herder.ConfigInfos) map[string]string {
			out := map[string]string{}
			for _, c := range ci.Configs {
				name := c.Definition.Name
				if !strings.HasPrefix(name, "transforms.") && !strings.HasPrefix(name, "predicates.") {
					continue
				}
				c.Value.RecommendedValues = nil // the worker's catalogue holds Debezium's too
				for i, e := range c.Value.Errors {
					if strings.Contains(e, "Invalid regex:") {
						c.Value.Errors[i] = e[:strings.Index(e, "Invalid regex:")] + "Invalid regex: …"
					}
				}
				b, _ := json.Marshal(c)
				out[name] = string(b)
			}
			return out
		}
		w, g := pick(want), pick(got)
		for name, wj := range w {
			if gj, ok := g[name]; !ok {
				t.Errorf("config %d: kcd lacks %s: %s", n, name, wj)
			} else if gj != wj {
				t.Errorf("config %d: %s:\nKafka Connect %s\nkcd           %s", n, name, wj, gj)
			}
		}
		for name := range g {
			if _, ok := w[name]; !ok {
				t.Errorf("config %d: kcd has %s, Kafka Connect not", n, name)
			}
		}
		t.Logf("config %d: %d settings compared", n, len(w))
	}
}

// TestIntegrationTransformsPluginConfig compares GET
// /connector-plugins/{class}/config of every transformation and
// predicate with the real worker's.
func TestIntegrationTransformsPluginConfig(t *testing.T) {
	connectURL := testenv.Require(t, testenv.ConnectURL)
	herdertest.Register()
	h := herder.New(herdertest.Store(t), herder.Options{Logger: slog.New(slog.DiscardHandler)})
	for _, class := range append(transforms.Transformations(), transforms.Predicates()...) {
		status, body := call(t, "GET", connectURL+"/connector-plugins/"+url.PathEscape(class)+"/config", nil)
		if status != 200 {
			t.Errorf("%s: the worker answered %d %s", class, status, body)
			continue
		}
		keys, err := h.PluginConfig(class, "")
		if err != nil {
			t.Errorf("%s: %v", class, err)
			continue
		}
		got, _ := json.Marshal(keys)
		var want any
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		wb, _ := json.Marshal(want)
		var g any
		json.Unmarshal(got, &g)
		gb, _ := json.Marshal(g)
		if string(wb) != string(gb) {
			t.Errorf("%s:\nKafka Connect %s\nkcd           %s", class, wb, gb)
		}
	}
}
