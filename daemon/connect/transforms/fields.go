package transforms

import (
	"strings"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connect/data"
)

const pkg = "org.apache.kafka.connect.transforms."

func init() {
	registerKV(pkg+"InsertField", insertFieldDef, func(k bool) Transformation { return &insertField{side: side(k)} })
	registerKV(pkg+"ReplaceField", replaceFieldDef, func(k bool) Transformation { return &replaceField{side: side(k)} })
	registerKV(pkg+"MaskField", maskFieldDef, func(k bool) Transformation { return &maskField{side: side(k)} })
	registerKV(pkg+"ExtractField", extractFieldDef, func(k bool) Transformation { return &extractField{side: side(k)} })
	registerKV(pkg+"HoistField", hoistFieldDef, func(k bool) Transformation { return &hoistField{side: side(k)} })
	registerKV(pkg+"Flatten", flattenDef, func(k bool) Transformation { return &flatten{side: side(k)} })
	registerKV(pkg+"SetSchemaMetadata", setSchemaMetadataDef, func(k bool) Transformation { return &setSchemaMetadata{side: side(k)} })
	register(Plugin{Class: pkg + "ValueToKey", Config: valueToKeyDef, NewTransformation: func() Transformation { return &valueToKey{} }})
}

// InsertField.

const optionalityDoc = "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional (the default)."

var insertFieldDef = connect.ConfigDef{
	{Name: "topic.field", Type: connect.TypeString, NullDefault: true, Importance: connect.Medium, Documentation: "Field name for Kafka topic. " + optionalityDoc},
	{Name: "partition.field", Type: connect.TypeString, NullDefault: true, Importance: connect.Medium, Documentation: "Field name for Kafka partition. " + optionalityDoc},
	{Name: "offset.field", Type: connect.TypeString, NullDefault: true, Importance: connect.Medium, Documentation: "Field name for Kafka offset - only applicable to sink connectors.<br/>" + optionalityDoc},
	{Name: "timestamp.field", Type: connect.TypeString, NullDefault: true, Importance: connect.Medium, Documentation: "Field name for record timestamp. " + optionalityDoc},
	{Name: "static.field", Type: connect.TypeString, NullDefault: true, Importance: connect.Medium, Documentation: "Field name for static data field. " + optionalityDoc},
	{Name: "static.value", Type: connect.TypeString, NullDefault: true, Importance: connect.Medium, Documentation: "Static field value, if field name configured."},
	replaceNullKey,
}

type insertionSpec struct {
	name     string
	optional bool
}

func parseInsertion(s *string) *insertionSpec {
	if s == nil {
		return nil
	}
	if n, ok := strings.CutSuffix(*s, "?"); ok {
		return &insertionSpec{n, true}
	}
	if n, ok := strings.CutSuffix(*s, "!"); ok {
		return &insertionSpec{n, false}
	}
	return &insertionSpec{*s, true}
}

type insertField struct {
	side
	topic, partition, offset, timestamp, static *insertionSpec
	staticValue                                 *string
	replaceNull                                 bool
}

const insertPurpose = "field insertion"

func (t *insertField) Configure(raw map[string]string) error {
	c, err := parseConfig(insertFieldDef, raw)
	if err != nil {
		return err
	}
	t.topic, t.partition = parseInsertion(c.str("topic.field")), parseInsertion(c.str("partition.field"))
	t.offset, t.timestamp = parseInsertion(c.str("offset.field")), parseInsertion(c.str("timestamp.field"))
	t.static, t.staticValue = parseInsertion(c.str("static.field")), c.str("static.value")
	t.replaceNull = c.bool("replace.null.with.default")
	if t.topic == nil && t.partition == nil && t.offset == nil && t.timestamp == nil && t.static == nil {
		return configErrorf("No field insertion configured")
	}
	if t.static != nil && t.staticValue == nil {
		return configErrorf("Invalid value null for configuration static.value: No value specified for static field: %s", t.static.name)
	}
	return nil
}

func requireSink(r *Record, purpose string) error {
	if !r.Sink {
		return data.Errorf("Only SinkRecord supported for [%s], found: org.apache.kafka.connect.source.SourceRecord", purpose)
	}
	return nil
}

func (t *insertField) Apply(r *Record) (*Record, error) {
	v := t.value(r)
	if v == nil {
		return r, nil
	}
	schema := t.schema(r)
	if schema == nil {
		m, err := requireMap(v, insertPurpose)
		if err != nil {
			return nil, err
		}
		if t.topic != nil {
			m.put(t.topic.name, r.Topic)
		}
		if t.partition != nil && r.Partition != nil {
			m.put(t.partition.name, *r.Partition)
		}
		if t.offset != nil {
			if err := requireSink(r, insertPurpose); err != nil {
				return nil, err
			}
			m.put(t.offset.name, r.Offset)
		}
		if t.timestamp != nil && r.Timestamp != nil {
			m.put(t.timestamp.name, *r.Timestamp)
		}
		if t.static != nil && t.staticValue != nil {
			m.put(t.static.name, *t.staticValue)
		}
		return t.with(r, nil, m.value()), nil
	}
	st, err := requireStruct(v, insertPurpose)
	if err != nil {
		return nil, err
	}
	ns := copySchemaBasics(st.Schema, structSchema())
	for _, f := range st.Schema.Fields {
		addField(ns, f.Name, f.Schema)
	}
	opt := func(s *insertionSpec, o, req *data.Schema) *data.Schema {
		if s.optional {
			return o
		}
		return req
	}
	if t.topic != nil {
		addField(ns, t.topic.name, opt(t.topic, data.OptionalStringSchema, data.StringSchema))
	}
	if t.partition != nil {
		addField(ns, t.partition.name, opt(t.partition, data.OptionalInt32Schema, data.Int32Schema))
	}
	if t.offset != nil {
		addField(ns, t.offset.name, opt(t.offset, data.OptionalInt64Schema, data.Int64Schema))
	}
	if t.timestamp != nil {
		addField(ns, t.timestamp.name, data.TimestampSchema(t.timestamp.optional))
	}
	if t.static != nil {
		addField(ns, t.static.name, opt(t.static, data.OptionalStringSchema, data.StringSchema))
	}
	out := data.NewStruct(ns)
	for i := range st.Schema.Fields {
		f := &st.Schema.Fields[i]
		if err := put(out, f.Name, fieldValue(st, f, t.replaceNull)); err != nil {
			return nil, err
		}
	}
	set := func(name string, v any) error { return put(out, name, v) }
	if t.topic != nil {
		if err := set(t.topic.name, r.Topic); err != nil {
			return nil, err
		}
	}
	if t.partition != nil && r.Partition != nil {
		if err := set(t.partition.name, *r.Partition); err != nil {
			return nil, err
		}
	}
	if t.offset != nil {
		if err := requireSink(r, insertPurpose); err != nil {
			return nil, err
		}
		if err := set(t.offset.name, r.Offset); err != nil {
			return nil, err
		}
	}
	if t.timestamp != nil && r.Timestamp != nil {
		if err := set(t.timestamp.name, data.TimestampFromMillis(*r.Timestamp)); err != nil {
			return nil, err
		}
	}
	if t.static != nil && t.staticValue != nil {
		if err := set(t.static.name, *t.staticValue); err != nil {
			return nil, err
		}
	}
	return t.with(r, ns, out), nil
}

// ReplaceField.

var replaceFieldDef = connect.ConfigDef{
	{Name: "exclude", Type: connect.TypeList, Default: def(""), Importance: connect.Medium, Documentation: "Fields to exclude. This takes precedence over the fields to include."},
	{Name: "include", Type: connect.TypeList, Default: def(""), Importance: connect.Medium, Documentation: "Fields to include. If specified, only these fields will be used."},
	{Name: "renames", Type: connect.TypeList, Default: def(""), Importance: connect.Medium, Documentation: "Field rename mappings.",
		Validator: func(v string) error {
			l := parseList(v)
			if _, err := parseRenames(l); err != nil {
				return &connect.MessageError{Msg: "Invalid value [" + strings.Join(l, ", ") + "] for configuration {name}: " + err.Error()}
			}
			return nil
		}},
	replaceNullKey,
}

func parseRenames(l []string) (map[string]string, error) {
	m := map[string]string{}
	for _, s := range l {
		parts := strings.Split(s, ":")
		if len(parts) != 2 {
			return nil, configErrorf("Invalid rename mapping: %s", s)
		}
		m[parts[0]] = parts[1]
	}
	return m, nil
}

type replaceField struct {
	side
	exclude, include map[string]bool
	renames, reverse map[string]string
	replaceNull      bool
}

func set(l []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range l {
		m[s] = true
	}
	return m
}

func (t *replaceField) Configure(raw map[string]string) error {
	c, err := parseConfig(replaceFieldDef, raw)
	if err != nil {
		return err
	}
	t.exclude, t.include = set(c.list("exclude")), set(c.list("include"))
	if t.renames, err = parseRenames(c.list("renames")); err != nil {
		return err
	}
	t.reverse = map[string]string{}
	for k, v := range t.renames {
		t.reverse[v] = k
	}
	t.replaceNull = c.bool("replace.null.with.default")
	return nil
}

func (t *replaceField) filter(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func renamed(m map[string]string, name string) string {
	if n, ok := m[name]; ok {
		return n
	}
	return name
}

func (t *replaceField) Apply(r *Record) (*Record, error) {
	v := t.value(r)
	if v == nil {
		return r, nil
	}
	const purpose = "field replacement"
	if t.schema(r) == nil {
		keys, vals, ok := javaEntries(v)
		if !ok {
			return nil, data.Errorf("Only Map objects supported in absence of schema for [%s], found: %s", purpose, className(v))
		}
		m := newJMap(len(keys))
		for i, k := range keys {
			ks, _ := k.(string)
			if t.filter(ks) {
				m.put(renamed(t.renames, ks), vals[i])
			}
		}
		return t.with(r, nil, m.value()), nil
	}
	st, err := requireStruct(v, purpose)
	if err != nil {
		return nil, err
	}
	ns := copySchemaBasics(st.Schema, structSchema())
	for _, f := range st.Schema.Fields {
		if t.filter(f.Name) {
			addField(ns, renamed(t.renames, f.Name), f.Schema)
		}
	}
	out := data.NewStruct(ns)
	for _, f := range ns.Fields {
		of := st.Schema.Field(renamed(t.reverse, f.Name))
		var fv any
		if of != nil {
			fv = fieldValue(st, of, t.replaceNull)
		}
		if err := put(out, f.Name, fv); err != nil {
			return nil, err
		}
	}
	return t.with(r, ns, out), nil
}

// ExtractField.

var extractFieldDef = connect.ConfigDef{
	{Name: "field", Type: connect.TypeString, Importance: connect.Medium, Documentation: "Field name to extract."},
	replaceNullKey,
	fieldSyntaxKey,
}

var fieldSyntaxKey = connect.ConfigKey{Name: "field.syntax.version", Type: connect.TypeString, Default: def("V1"), Importance: connect.High,
	Documentation: "Defines the version of the syntax to access fields. If set to <code>V1</code>, then the field paths are limited to access the elements at the root level of the struct or map. If set to <code>V2</code>, the syntax will support accessing nested elements. To access nested elements, dotted notation is used. If dots are already included in the field name, then backtick pairs can be used to wrap field names containing dots. E.g. to access the subfield <code>baz</code> from a field named \"foo.bar\" in a struct/map the following format can be used to access its elements: \"<code>foo.bar</code>.baz\".",
	Validator: func(v string) error {
		if v != "V1" && v != "V2" {
			return configErrorf("String must be one of (case insensitive): V1, V2")
		}
		return nil
	}}

type extractField struct {
	side
	path        []string
	original    string
	replaceNull bool
}

// fieldPath splits a field path: one name with syntax V1, dotted names
// (backticks quoting a name with dots) with V2.
func fieldPath(s, version string) []string {
	if version != "V2" {
		return []string{s}
	}
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '`' && (quoted || cur.Len() == 0):
			quoted = !quoted
		case ch == '.' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(ch)
		}
	}
	return append(out, cur.String())
}

func (t *extractField) Configure(raw map[string]string) error {
	c, err := parseConfig(extractFieldDef, raw)
	if err != nil {
		return err
	}
	t.original = c.string("field")
	t.path = fieldPath(t.original, c.string("field.syntax.version"))
	t.replaceNull = c.bool("replace.null.with.default")
	return nil
}

func (t *extractField) Apply(r *Record) (*Record, error) {
	const purpose = "field extraction"
	v := t.value(r)
	schema := t.schema(r)
	if schema == nil {
		if v == nil {
			return t.with(r, nil, nil), nil
		}
		cur := v
		for _, name := range t.path {
			keys, vals, ok := javaEntries(cur)
			if !ok {
				if cur == v {
					return nil, data.Errorf("Only Map objects supported in absence of schema for [%s], found: %s", purpose, className(v))
				}
				cur = nil
				break
			}
			var next any
			for i, k := range keys {
				if k == name {
					next = vals[i]
				}
			}
			cur = next
		}
		return t.with(r, nil, cur), nil
	}
	st, err := requireStructOrNull(v, purpose)
	if err != nil {
		return nil, err
	}
	s := schema
	var f *data.Field
	for _, name := range t.path {
		if s == nil || s.Type != data.StructT {
			f = nil
			break
		}
		if f = s.Field(name); f == nil {
			break
		}
		s = f.Schema
	}
	if f == nil {
		return nil, data.Errorf("Unknown field: %s", t.original)
	}
	if st == nil {
		return t.with(r, f.Schema, nil), nil
	}
	var cur any = st
	for _, name := range t.path {
		cs, ok := cur.(*data.Struct)
		if !ok || cs == nil {
			cur = nil
			break
		}
		cur = fieldValue(cs, cs.Schema.Field(name), t.replaceNull)
	}
	return t.with(r, f.Schema, cur), nil
}

// HoistField.

var hoistFieldDef = connect.ConfigDef{
	{Name: "field", Type: connect.TypeString, Importance: connect.Medium, Documentation: "Field name for the single field that will be created in the resulting Struct or Map."},
}

type hoistField struct {
	side
	field string
}

func (t *hoistField) Configure(raw map[string]string) error {
	c, err := parseConfig(hoistFieldDef, raw)
	if err != nil {
		return err
	}
	t.field = c.string("field")
	return nil
}

func (t *hoistField) Apply(r *Record) (*Record, error) {
	v, schema := t.value(r), t.schema(r)
	if schema == nil {
		m := newJMap(-1)
		m.put(t.field, v)
		return t.with(r, nil, m.value()), nil
	}
	ns := structSchema()
	addField(ns, t.field, schema)
	out := data.NewStruct(ns)
	if err := put(out, t.field, v); err != nil {
		return nil, err
	}
	return t.with(r, ns, out), nil
}

// ValueToKey.

var valueToKeyDef = connect.ConfigDef{
	{Name: "fields", Type: connect.TypeList, Importance: connect.High, Documentation: "Field names on the record value to extract as the record key.", Validator: nonEmptyList, NullMessage: nullList},
	replaceNullKey,
}

type valueToKey struct {
	fields      []string
	replaceNull bool
}

func (t *valueToKey) Configure(raw map[string]string) error {
	c, err := parseConfig(valueToKeyDef, raw)
	if err != nil {
		return err
	}
	t.fields, t.replaceNull = c.list("fields"), c.bool("replace.null.with.default")
	return nil
}

func (t *valueToKey) Apply(r *Record) (*Record, error) {
	const purpose = "copying fields from value to key"
	out := r.clone()
	if r.ValueSchema == nil {
		m, err := requireMap(r.Value, purpose)
		if err != nil {
			return nil, err
		}
		key := newJMap(len(t.fields))
		for _, f := range t.fields {
			key.put(f, m.get(f))
		}
		out.KeySchema, out.Key = nil, key.value()
		return out, nil
	}
	st, err := requireStruct(r.Value, purpose)
	if err != nil {
		return nil, err
	}
	ks := structSchema()
	for _, name := range t.fields {
		f := st.Schema.Field(name)
		if f == nil {
			return nil, data.Errorf("Field does not exist: %s", name)
		}
		addField(ks, name, f.Schema)
	}
	key := data.NewStruct(ks)
	for _, name := range t.fields {
		if err := put(key, name, fieldValue(st, st.Schema.Field(name), t.replaceNull)); err != nil {
			return nil, err
		}
	}
	out.KeySchema, out.Key = ks, key
	out.ValueSchema = st.Schema
	return out, nil
}

// Flatten.

var flattenDef = connect.ConfigDef{
	{Name: "delimiter", Type: connect.TypeString, Default: def("."), Importance: connect.Medium, Documentation: "Delimiter to insert between field names from the input record when generating field names for the output record"},
}

type flatten struct {
	side
	delim string
}

func (t *flatten) Configure(raw map[string]string) error {
	c, err := parseConfig(flattenDef, raw)
	if err != nil {
		return err
	}
	t.delim = c.string("delimiter")
	return nil
}

func (t *flatten) name(prefix, f string) string {
	if prefix == "" {
		return f
	}
	return prefix + t.delim + f
}

func (t *flatten) Apply(r *Record) (*Record, error) {
	v, schema := t.value(r), t.schema(r)
	if v == nil {
		return r, nil
	}
	if schema == nil {
		keys, vals, ok := javaEntries(v)
		if !ok {
			return nil, data.Errorf("Only Map objects supported in absence of schema for [flattening], found: %s", className(v))
		}
		m := &jmap{linked: true}
		if err := t.schemaless(keys, vals, "", m); err != nil {
			return nil, err
		}
		return t.with(r, nil, m.value()), nil
	}
	st, err := requireStructOrNull(v, "flattening")
	if err != nil {
		return nil, err
	}
	ns := copySchemaBasics(schema, structSchema())
	dflt, _ := schema.Default.(*data.Struct)
	if err := t.buildSchema(schema, "", ns, schema.Optional, dflt); err != nil {
		return nil, err
	}
	out := data.NewStruct(ns)
	if err := t.buildValue(st, "", out); err != nil {
		return nil, err
	}
	return t.with(r, ns, out), nil
}

func (t *flatten) schemaless(keys, vals []any, prefix string, m *jmap) error {
	for i, k := range keys {
		ks, _ := k.(string)
		name := t.name(prefix, ks)
		v := vals[i]
		if v == nil {
			m.put(name, nil)
			continue
		}
		switch typ := schemaType(v); typ {
		case "":
			return data.Errorf("Flatten transformation was passed a value of type %s which is not supported by Connect's data API", javaClass(v))
		case data.Map:
			ck, cv, _ := javaEntries(v)
			if err := t.schemaless(ck, cv, name, m); err != nil {
				return err
			}
		case data.StructT:
			return data.Errorf("Flatten transformation does not support %s for record without schemas (for field %s).", javaClass(v), name)
		default:
			m.put(name, v)
		}
	}
	return nil
}

func (t *flatten) buildSchema(s *data.Schema, prefix string, ns *data.Schema, optional bool, parentDefault *data.Struct) error {
	for i := range s.Fields {
		f := &s.Fields[i]
		name := t.name(prefix, f.Name)
		fieldOptional := optional || f.Schema.Optional
		var fieldDefault any
		if f.Schema.Default != nil {
			fieldDefault = f.Schema.Default
		} else if parentDefault != nil {
			fieldDefault = fieldGet(parentDefault, f)
		}
		switch f.Schema.Type {
		case data.StructT:
			d, _ := fieldDefault.(*data.Struct)
			if err := t.buildSchema(f.Schema, name, ns, fieldOptional, d); err != nil {
				return err
			}
		case data.Map:
			return data.Errorf("Flatten transformation does not support %s for record with schemas (for field %s).", f.Schema.Type, name)
		default:
			c := copySchemaBasics(f.Schema, &data.Schema{Type: f.Schema.Type})
			if f.Schema.Type == data.Array {
				c.ValueSchema = f.Schema.ValueSchema
			}
			c.Optional = fieldOptional
			c.Default = fieldDefault
			addField(ns, name, c)
		}
	}
	return nil
}

func (t *flatten) buildValue(st *data.Struct, prefix string, out *data.Struct) error {
	if st == nil {
		return nil
	}
	for i := range st.Schema.Fields {
		f := &st.Schema.Fields[i]
		name := t.name(prefix, f.Name)
		if f.Schema.Type == data.StructT {
			child, _ := fieldGet(st, f).(*data.Struct)
			if err := t.buildValue(child, name, out); err != nil {
				return err
			}
			continue
		}
		if err := put(out, name, fieldGet(st, f)); err != nil {
			return err
		}
	}
	return nil
}

// SetSchemaMetadata.

var setSchemaMetadataDef = connect.ConfigDef{
	{Name: "schema.name", Type: connect.TypeString, NullDefault: true, Importance: connect.High, Documentation: "Schema name to set."},
	{Name: "schema.version", Type: connect.TypeInt, NullDefault: true, Importance: connect.High, Documentation: "Schema version to set."},
	replaceNullKey,
}

type setSchemaMetadata struct {
	side
	name        *string
	version     *int32
	replaceNull bool
}

func (t *setSchemaMetadata) Configure(raw map[string]string) error {
	c, err := parseConfig(setSchemaMetadataDef, raw)
	if err != nil {
		return err
	}
	t.name = c.str("schema.name")
	if n, ok := c.int("schema.version"); ok {
		v := int32(n)
		t.version = &v
	}
	t.replaceNull = c.bool("replace.null.with.default")
	if t.name == nil && t.version == nil {
		return configErrorf("Neither schema name nor version configured")
	}
	return nil
}

func (t *setSchemaMetadata) Apply(r *Record) (*Record, error) {
	v, schema := t.value(r), t.schema(r)
	if v == nil && schema == nil {
		return r, nil
	}
	if schema == nil {
		return nil, data.Errorf("Schema required for [updating schema metadata]")
	}
	ns := *schema
	if t.name != nil {
		ns.Name = *t.name
	}
	if t.version != nil {
		ns.Version = t.version
	}
	if st, ok := v.(*data.Struct); ok && st != nil {
		out := data.NewStruct(&ns)
		for i := range ns.Fields {
			out.Values[i] = fieldValue(st, &st.Schema.Fields[i], t.replaceNull)
		}
		v = out
	}
	return t.with(r, &ns, v), nil
}
