package transforms

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

const predPkg = pkg + "predicates."

func init() {
	registerKV(pkg+"HeaderFrom", headerFromDef, func(k bool) Transformation { return &headerFrom{side: side(k)} })
	register(Plugin{Class: pkg + "InsertHeader", Config: insertHeaderDef, NewTransformation: func() Transformation { return &insertHeader{} }})
	register(Plugin{Class: pkg + "DropHeaders", Config: dropHeadersDef, NewTransformation: func() Transformation { return &dropHeaders{} }})
	register(Plugin{Class: pkg + "RegexRouter", Config: regexRouterDef, NewTransformation: func() Transformation { return &regexRouter{} }})
	register(Plugin{Class: pkg + "Filter", Config: connect.ConfigDef{}, NewTransformation: func() Transformation { return filter{} }})
	register(Plugin{Class: predPkg + "TopicNameMatches", Config: topicNameMatchesDef, NewPredicate: func() Predicate { return &topicNameMatches{} }})
	register(Plugin{Class: predPkg + "HasHeaderKey", Config: hasHeaderKeyDef, NewPredicate: func() Predicate { return &hasHeaderKey{} }})
	register(Plugin{Class: predPkg + "RecordIsTombstone", Config: connect.ConfigDef{}, NewPredicate: func() Predicate { return recordIsTombstone{} }})
}

// HeaderFrom.

var headerFromDef = connect.ConfigDef{
	{Name: "fields", Type: connect.TypeList, Importance: connect.High, Documentation: "Field names in the record whose values are to be copied or moved to headers.",
		Validator: emptyList, NullMessage: "Invalid value null for configuration {name}: Empty list"},
	{Name: "headers", Type: connect.TypeList, Importance: connect.High, Documentation: "Header names, in the same order as the field names listed in the fields configuration property.",
		Validator: emptyList, NullMessage: "Invalid value null for configuration {name}: Empty list"},
	{Name: "operation", Type: connect.TypeString, Importance: connect.High,
		Documentation: "Either <code>move</code> if the fields are to be moved to the headers (removed from the key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in the key/value).",
		Validator: func(v string) error {
			if v != "move" && v != "copy" {
				return fmt.Errorf("String must be one of: move, copy")
			}
			return nil
		}, NullMessage: "Invalid value null for configuration {name}: String must be one of: move, copy"},
	replaceNullKey,
}

type headerFrom struct {
	side
	fields, headers []string
	move            bool
	replaceNull     bool
}

func (t *headerFrom) Configure(raw map[string]string) error {
	c, err := parseConfig(headerFromDef, raw)
	if err != nil {
		return err
	}
	t.fields, t.headers = c.list("fields"), c.list("headers")
	if len(t.fields) != len(t.headers) {
		return configErrorf("'fields' config must have the same number of elements as 'headers' config.")
	}
	t.move, t.replaceNull = c.string("operation") == "move", c.bool("replace.null.with.default")
	return nil
}

func (t *headerFrom) Apply(r *Record) (*Record, error) {
	v, schema := t.value(r), t.schema(r)
	op := "copy"
	if t.move {
		op = "move"
	}
	headers := slices.Clone(r.Headers)
	if schema == nil {
		m, err := requireMap(v, "header "+op)
		if err != nil {
			return nil, err
		}
		orig := copyJMap(m.keys, m.vals)
		for i, f := range t.fields {
			if t.move {
				m.remove(f)
			}
			headers = append(headers, connect.Header{Key: t.headers[i], Value: orig.get(f)})
		}
		out := t.with(r, nil, m.value())
		out.Headers = headers
		return out, nil
	}
	st, err := requireStruct(v, "header "+op)
	if err != nil {
		return nil, err
	}
	ns, nv := schema, any(st)
	if t.move {
		ns = copySchemaBasics(schema, structSchema())
		for _, f := range schema.Fields {
			if !slices.Contains(t.fields, f.Name) {
				addField(ns, f.Name, f.Schema)
			}
		}
		out := data.NewStruct(ns)
		for _, f := range ns.Fields {
			if err := put(out, f.Name, fieldValue(st, schema.Field(f.Name), t.replaceNull)); err != nil {
				return nil, err
			}
		}
		nv = out
	}
	for i, name := range t.fields {
		f := schema.Field(name)
		if f == nil {
			return nil, data.Errorf("%s is not a valid field name", name)
		}
		headers = append(headers, connect.Header{Key: t.headers[i], Schema: f.Schema, Value: fieldValue(st, f, t.replaceNull)})
	}
	out := t.with(r, ns, nv)
	out.Headers = headers
	return out, nil
}

// emptyList is ConfigDef.NonEmptyList's check.
func emptyList(v string) error {
	if len(parseList(v)) == 0 {
		return fmt.Errorf("Empty list")
	}
	return nil
}

// InsertHeader.

var insertHeaderDef = connect.ConfigDef{
	{Name: "header", Type: connect.TypeString, Importance: connect.High, Documentation: "The name of the header.",
		NullMessage: "Invalid value null for configuration {name}: entry must be non null"},
	{Name: "value.literal", Type: connect.TypeString, Importance: connect.High, Documentation: "The literal value that is to be set as the header value on all records.",
		NullMessage: "Invalid value null for configuration {name}: entry must be non null"},
}

type insertHeader struct {
	header string
	schema *data.Schema
	value  any
}

func (t *insertHeader) Configure(raw map[string]string) error {
	c, err := parseConfig(insertHeaderDef, raw)
	if err != nil {
		return err
	}
	t.header = c.string("header")
	t.schema, t.value = parseLiteral(c.string("value.literal"))
	return nil
}

// parseLiteral is the part of Values.parseString kcd supports: booleans,
// whole numbers (the smallest integer type that holds them), other
// numbers (FLOAT32) and text.
func parseLiteral(s string) (*data.Schema, any) {
	tok := strings.TrimSpace(s)
	switch tok {
	case "true":
		return data.BooleanSchema, true
	case "false":
		return data.BooleanSchema, false
	case "":
		return data.StringSchema, s
	}
	if c := tok[0]; (c >= '0' && c <= '9') || c == '+' || c == '-' {
		if n, ok := new(big.Int).SetString(strings.TrimPrefix(tok, "+"), 10); ok && n.IsInt64() {
			v := n.Int64()
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return data.Int8Schema, int8(v)
			case v >= math.MinInt16 && v <= math.MaxInt16:
				return data.Int16Schema, int16(v)
			case v >= math.MinInt32 && v <= math.MaxInt32:
				return data.Int32Schema, int32(v)
			}
			return data.Int64Schema, v
		}
		if strings.ContainsAny(tok, ".eE") {
			if f, err := strconv.ParseFloat(tok, 32); err == nil {
				return data.Float32Schema, float32(f)
			}
		}
	}
	return data.StringSchema, s
}

func (t *insertHeader) Apply(r *Record) (*Record, error) {
	out := r.clone()
	out.Headers = append(slices.Clone(r.Headers), connect.Header{Key: t.header, Schema: t.schema, Value: t.value})
	return out, nil
}

// DropHeaders.

var dropHeadersDef = connect.ConfigDef{
	{Name: "headers", Type: connect.TypeList, Importance: connect.High, Documentation: "The name of the headers to be removed.",
		Validator: nonEmptyList, NullMessage: nullList},
}

type dropHeaders struct{ names map[string]bool }

func (t *dropHeaders) Configure(raw map[string]string) error {
	c, err := parseConfig(dropHeadersDef, raw)
	if err != nil {
		return err
	}
	t.names = set(c.list("headers"))
	return nil
}

func (t *dropHeaders) Apply(r *Record) (*Record, error) {
	out := r.clone()
	out.Headers = slices.DeleteFunc(slices.Clone(r.Headers), func(h connect.Header) bool { return t.names[h.Key] })
	return out, nil
}

// RegexRouter.

var regexRouterDef = connect.ConfigDef{
	{Name: "regex", Type: connect.TypeString, Importance: connect.High, Documentation: "Regular expression to use for matching.", Validator: validRegex, NullMessage: nullRegex},
	{Name: "replacement", Type: connect.TypeString, Importance: connect.High, Documentation: "Replacement string."},
}

// nullRegex is RegexValidator's message for null (Java's
// NullPointerException).
const nullRegex = `Invalid value null for configuration {name}: Invalid regex: Cannot invoke "String.isEmpty()" because "this.pattern" is null`

func validRegex(v string) error {
	if _, err := regexp.Compile(v); err != nil {
		return fmt.Errorf("Invalid regex: %v", err)
	}
	return nil
}

type regexRouter struct {
	re          *regexp.Regexp
	replacement string
}

func (t *regexRouter) Configure(raw map[string]string) error {
	c, err := parseConfig(regexRouterDef, raw)
	if err != nil {
		return err
	}
	t.re = regexp.MustCompile(`^(?:` + c.string("regex") + `)$`)
	t.replacement = c.string("replacement")
	return nil
}

func (t *regexRouter) Apply(r *Record) (*Record, error) {
	m := t.re.FindStringSubmatchIndex(r.Topic)
	if m == nil {
		return r, nil
	}
	topic, err := javaReplacement(t.re, r.Topic, m, t.replacement)
	if err != nil {
		return nil, err
	}
	out := r.clone()
	out.Topic = topic
	return out, nil
}

// javaReplacement expands a java.util.regex replacement: $n and ${name}
// refer to groups, a backslash quotes the next character.
func javaReplacement(re *regexp.Regexp, s string, m []int, repl string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			b.WriteByte(repl[i])
		case c == '$' && i+1 < len(repl) && repl[i+1] == '{':
			end := strings.IndexByte(repl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("named capturing group is missing trailing '}'")
			}
			g := re.SubexpIndex(repl[i+2 : i+end])
			if g < 0 {
				return "", fmt.Errorf("No group with name {%s}", repl[i+2:i+end])
			}
			if m[2*g] >= 0 {
				b.WriteString(s[m[2*g]:m[2*g+1]])
			}
			i += end
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			g := int(repl[i+1] - '0')
			i++
			// More digits while they still name a group.
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' && g*10+int(repl[i+1]-'0') <= re.NumSubexp() {
				g = g*10 + int(repl[i+1]-'0')
				i++
			}
			if g > re.NumSubexp() {
				return "", fmt.Errorf("No group %d", g)
			}
			if m[2*g] >= 0 {
				b.WriteString(s[m[2*g]:m[2*g+1]])
			}
		case c == '$':
			return "", fmt.Errorf("Illegal group reference")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Filter drops every record it is applied to: with a predicate, those the
// predicate selects.
type filter struct{}

func (filter) Configure(map[string]string) error { return nil }
func (filter) Apply(*Record) (*Record, error)    { return nil, nil }

// Predicates.

var topicNameMatchesDef = connect.ConfigDef{
	{Name: "pattern", Type: connect.TypeString, Importance: connect.Medium,
		Documentation: "A Java regular expression for matching against the name of a record's topic.",
		Validator:     validRegex,
		// Java's NullPointerException in Kafka Connect's validator.
		NullMessage: nullRegex},
}

type topicNameMatches struct{ re *regexp.Regexp }

func (p *topicNameMatches) Configure(raw map[string]string) error {
	c, err := parseConfig(topicNameMatchesDef, raw)
	if err != nil {
		return err
	}
	p.re = regexp.MustCompile(`^(?:` + c.string("pattern") + `)$`)
	return nil
}

func (p *topicNameMatches) Test(r *Record) (bool, error) {
	return r.Topic != "" && p.re.MatchString(r.Topic), nil
}

var hasHeaderKeyDef = connect.ConfigDef{
	{Name: "name", Type: connect.TypeString, Importance: connect.Medium, Documentation: "The header name.", Validator: nonEmptyString},
}

type hasHeaderKey struct{ name string }

func (p *hasHeaderKey) Configure(raw map[string]string) error {
	c, err := parseConfig(hasHeaderKeyDef, raw)
	if err != nil {
		return err
	}
	p.name = c.string("name")
	return nil
}

func (p *hasHeaderKey) Test(r *Record) (bool, error) {
	return slices.ContainsFunc(r.Headers, func(h connect.Header) bool { return h.Key == p.name }), nil
}

type recordIsTombstone struct{}

func (recordIsTombstone) Configure(map[string]string) error { return nil }
func (recordIsTombstone) Test(r *Record) (bool, error)      { return r.Value == nil, nil }
