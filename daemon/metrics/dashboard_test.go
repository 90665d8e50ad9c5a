package metrics

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The example Grafana dashboard (deploy/grafana) is valid JSON, and every
// series its queries and variables read is in kcd's /metrics.
func TestGrafanaDashboardQueriesExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/kcd-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}

	// The series names a scrape shows, with their _sum, _count, _bucket.
	h := New(fakeSources(20))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	have := map[string]bool{}
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		have[line[:strings.IndexAny(line, "{ ")]] = true
	}

	name := regexp.MustCompile(`\b(kcd|go|process)_[a-z0-9_]+\b`)
	queries := 0
	check := func(where, expr string) {
		for _, m := range name.FindAllString(expr, -1) {
			if !have[m] {
				t.Errorf("%s queries %s, which kcd's /metrics does not have", where, m)
			}
		}
	}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			check("panel "+p.Title, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		check("variable "+v.Definition, v.Definition)
	}
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
}
