package migrate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kcd-project/kcd/api"
)

// Plugin is one plugin a kcd cluster has, as GET
// /connector-plugins?connectorsOnly=false lists it.
type Plugin struct {
	Class string `json:"class"`
	// Type is source, sink, converter, header_converter, transformation
	// or predicate.
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

// Catalogue is what a kcd cluster can run.
type Catalogue struct {
	byName map[string]Plugin
}

// NewCatalogue indexes plugins by class and by the aliases Kafka Connect
// accepts: the simple class name and, for a connector or converter, that
// name without its "Connector" or "Converter" suffix.
func NewCatalogue(plugins []Plugin) Catalogue {
	c := Catalogue{byName: map[string]Plugin{}}
	for _, p := range plugins {
		c.byName[p.Class] = p
	}
	for _, p := range plugins {
		simple := p.Class[strings.LastIndexByte(p.Class, '.')+1:]
		for _, n := range []string{simple, strings.TrimSuffix(simple, "Connector"), strings.TrimSuffix(simple, "Converter")} {
			if _, taken := c.byName[n]; !taken && n != "" {
				c.byName[n] = p
			}
		}
	}
	return c
}

// Lookup finds a plugin by class name or alias.
func (c Catalogue) Lookup(name string) (Plugin, bool) {
	p, ok := c.byName[strings.TrimSpace(name)]
	return p, ok
}

// Plan is what an import would do: every connector read, what kcd makes of
// it, and what cannot be carried over.
type Plan struct {
	Connectors []PlanConnector `json:"connectors"`
	// Orphans are offsets of connectors that no longer exist: not imported.
	Orphans  map[string]int `json:"orphans,omitempty"`
	Problems []Problem      `json:"problems,omitempty"`
	// ProblemsLeftOut counts the problems not listed (past MaxProblems).
	ProblemsLeftOut int          `json:"problems_left_out,omitempty"`
	Stats           []TopicStats `json:"stats,omitempty"`
}

// PlanConnector is one connector of a plan.
type PlanConnector struct {
	Name  string `json:"name"`
	Class string `json:"class"`
	// Type is sink when the config names topics or topics.regex, else
	// source, as Kafka Connect tells them apart.
	Type string `json:"type"`
	// From is the target state on Kafka Connect, Target kcd's after the
	// import: STOPPED when kcd cannot run the connector (see Missing).
	From   string `json:"from"`
	Target string `json:"target"`
	Tasks  int    `json:"tasks"`
	// SourceOffsets and SinkOffsets count the offsets carried over.
	SourceOffsets int `json:"source_offsets"`
	SinkOffsets   int `json:"sink_offsets"`
	// Action is what kcd does with it (api.ImportCreate, ...) and Reason
	// why, as the cluster answered; empty before it did.
	Action string `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Missing are the plugins the connector uses that kcd does not have:
	// its class, converters, transforms and predicates.
	Missing []string `json:"missing,omitempty"`
	// Notes say what else changes on the way (null config values dropped,
	// task configs left for kcd to generate, ...).
	Notes []string `json:"notes,omitempty"`
}

// Imported tells whether the connector's config and offsets are written.
func (p PlanConnector) Imported() bool {
	return p.Action == api.ImportCreate || p.Action == api.ImportOverwrite
}

// BuildPlan decides what kcd makes of each connector of c, given what kcd
// can run. Actions are left for the cluster to fill in (SetActions).
func BuildPlan(c *Cluster, cat Catalogue) *Plan {
	p := &Plan{Orphans: c.Orphans, Problems: c.Problems, ProblemsLeftOut: c.ProblemsLeftOut, Stats: c.Stats}
	for _, conn := range c.Connectors {
		p.Connectors = append(p.Connectors, planConnector(conn, cat))
	}
	return p
}

func planConnector(c *Connector, cat Catalogue) PlanConnector {
	pc := PlanConnector{
		Name: c.Name, Class: c.Config["connector.class"], Type: "source",
		From: c.Target, Target: c.Target,
		SourceOffsets: len(c.SourceOffsets), SinkOffsets: len(c.SinkOffsets),
	}
	if c.IsSink() {
		pc.Type = "sink"
	}
	// A class kcd knows has its type; the topics heuristic of IsSink is
	// wrong for sources that take a topics setting of their own (Kafka
	// Connect's MirrorSourceConnector).
	if p, ok := cat.Lookup(pc.Class); ok && (p.Type == "source" || p.Type == "sink") {
		pc.Type = p.Type
	}
	if !has(cat, pc.Class, pc.Type) {
		pc.Missing = append(pc.Missing, "connector "+orNone(pc.Class))
	}
	for _, key := range []string{"key.converter", "value.converter", "header.converter"} {
		if class, ok := c.Config[key]; ok && !has(cat, class, "converter", "header_converter") {
			pc.Missing = append(pc.Missing, key+" "+class)
		}
	}
	pc.Missing = append(pc.Missing, missingAliased(c.Config, cat, "transforms", "transformation")...)
	pc.Missing = append(pc.Missing, missingAliased(c.Config, cat, "predicates", "predicate")...)
	if c.StoppedForMigration {
		pc.Notes = append(pc.Notes, "stopped on Kafka Connect for the migration: "+c.Target+" in kcd")
	}
	if len(c.NullKeys) > 0 {
		pc.Notes = append(pc.Notes, "null values dropped: "+strings.Join(c.NullKeys, ", "))
	}
	if len(c.TaskNullKeys) > 0 && c.Target != "STOPPED" && !c.Inconsistent && len(pc.Missing) == 0 {
		pc.Notes = append(pc.Notes, "null values dropped from the task configs: "+strings.Join(c.TaskNullKeys, ", "))
	}
	switch {
	case len(pc.Missing) > 0:
		pc.Target = "STOPPED"
		pc.Notes = append(pc.Notes, "imported STOPPED: kcd lacks "+strings.Join(pc.Missing, ", "))
	case c.Target == "STOPPED":
	case c.Inconsistent:
		pc.Notes = append(pc.Notes, "its task configs were not all written on Kafka Connect: kcd generates them")
	default:
		pc.Tasks = len(c.Tasks)
	}
	return pc
}

func orNone(s string) string {
	if s == "" {
		return "(none set)"
	}
	return s
}

// has tells whether cat has class as one of types.
func has(cat Catalogue, class string, types ...string) bool {
	p, ok := cat.Lookup(class)
	return ok && slices.Contains(types, p.Type)
}

// missingAliased names the plugins of a list setting (transforms=a,b with
// transforms.a.type=Class) that cat lacks.
func missingAliased(cfg map[string]string, cat Catalogue, list, typ string) []string {
	var out []string
	for alias := range strings.SplitSeq(cfg[list], ",") {
		alias = strings.TrimSpace(alias)
		if alias == "" {
			continue
		}
		class := cfg[list+"."+alias+".type"]
		if !has(cat, class, typ) {
			out = append(out, fmt.Sprintf("%s %s (%s)", typ, orNone(class), alias))
		}
	}
	return out
}

// ImportRequest is the request that opens the plan's import in kcd: every
// connector of c, with the target states and task configs of p.
func (p *Plan) ImportRequest(c *Cluster, overwrite, dryRun bool) api.ImportRequest {
	req := api.ImportRequest{Overwrite: overwrite, DryRun: dryRun}
	planned := map[string]PlanConnector{}
	for _, pc := range p.Connectors {
		planned[pc.Name] = pc
	}
	for _, conn := range c.Connectors {
		pc, ok := planned[conn.Name]
		if !ok {
			continue
		}
		ic := api.ImportConnector{Name: conn.Name, Config: conn.Config, Target: pc.Target}
		if pc.Tasks > 0 {
			ic.Tasks = conn.Tasks
		}
		req.Connectors = append(req.Connectors, ic)
	}
	return req
}

// SetActions records what the cluster answered it does with each
// connector.
func (p *Plan) SetActions(items []api.ImportItem) {
	by := make(map[string]api.ImportItem, len(items))
	for _, it := range items {
		by[it.Name] = it
	}
	for i := range p.Connectors {
		if it, ok := by[p.Connectors[i].Name]; ok {
			p.Connectors[i].Action, p.Connectors[i].Reason = it.Action, it.Reason
		}
	}
}

// Blocked lists the connectors the import cannot replace.
func (p *Plan) Blocked() []string {
	var out []string
	for _, pc := range p.Connectors {
		if pc.Action == api.ImportBlocked {
			out = append(out, pc.Name)
		}
	}
	return out
}

// maxChunkBytes bounds the JSON of one chunk of Offsets, well under the
// 4 MiB kcd takes in one request.
const maxChunkBytes = 2 << 20

// Offsets returns the offsets to stage for the connectors the import
// writes, in chunks of at most max (source and sink together) and about
// maxChunkBytes of JSON.
func (p *Plan) Offsets(c *Cluster, max int) []api.ImportOffsets {
	var out []api.ImportOffsets
	var cur api.ImportOffsets
	n, size := 0, 0
	flush := func() {
		if n > 0 {
			out = append(out, cur)
			cur, n, size = api.ImportOffsets{}, 0, 0
		}
	}
	// add counts one offset of about b bytes, after those before it.
	add := func(b int) {
		if n > 0 && size+b > maxChunkBytes {
			flush()
		}
		n++
		size += b
	}
	imported := map[string]bool{}
	for _, pc := range p.Connectors {
		imported[pc.Name] = pc.Imported()
	}
	for _, conn := range c.Connectors {
		if !imported[conn.Name] {
			continue
		}
		for _, o := range conn.SourceOffsets {
			so := api.ImportSourceOffset{Connector: conn.Name, Partition: o.Partition, Offset: o.Offset, Key: carriedKey(conn.Name, o)}
			// The key's quotes and backslashes are escaped again: up to
			// twice its bytes.
			add(64 + len(conn.Name) + len(jsonForm(o.Partition)) + len(jsonForm(o.Offset)) + 2*len(so.Key))
			cur.Source = append(cur.Source, so)
			if n == max {
				flush()
			}
		}
		for _, o := range conn.SinkOffsets {
			add(96 + len(conn.Name) + len(o.Topic))
			cur.Sink = append(cur.Sink, api.ImportSinkOffset{Connector: conn.Name, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
			if n == max {
				flush()
			}
		}
	}
	flush()
	return out
}
