package printer

import (
	"bytes"
	"strings"
	"testing"
)

type thing struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func sample() Printable {
	return Printable{
		Data:  []thing{{"a", 1}, {"bb", 22}},
		Table: Table{Header: []string{"NAME", "COUNT"}, Rows: [][]string{{"a", "1"}, {"bb", "22"}}, WideHeader: []string{"EXTRA"}, WideRows: [][]string{{"x"}, {"y"}}},
		Names: []string{"thing/a", "thing/bb"},
	}
}

func TestFormats(t *testing.T) {
	cases := map[string]string{
		"table": "NAME   COUNT\na      1\nbb     22\n",
		"wide":  "NAME   COUNT   EXTRA\na      1       x\nbb     22      y\n",
		"json":  "[\n  {\n    \"name\": \"a\",\n    \"count\": 1\n  },\n  {\n    \"name\": \"bb\",\n    \"count\": 22\n  }\n]\n",
		"yaml":  "- count: 1\n  name: a\n- count: 22\n  name: bb\n",
		"name":  "thing/a\nthing/bb\n",
	}
	for f, want := range cases {
		var buf bytes.Buffer
		if err := Print(&buf, f, sample()); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if buf.String() != want {
			t.Errorf("%s:\n got %q\nwant %q", f, buf.String(), want)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Print(&bytes.Buffer{}, "xml", sample())
	if err == nil || !strings.Contains(err.Error(), "table, wide, json, yaml, name") {
		t.Fatalf("got %v", err)
	}
}
