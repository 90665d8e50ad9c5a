package converter

import (
	"strconv"

	"github.com/kcd-project/kcd/daemon/connect/data"
)

// The schema JSON, as JsonConverter.asJsonSchema writes it: "type", then
// "items" / "keys" and "values" / "fields", "optional", and when set
// "name", "version", "doc", "parameters" and "default". A struct field is
// its schema's JSON with "field" added last.

func typeName(t data.Type) string {
	switch t {
	case data.Boolean:
		return "boolean"
	case data.Int8:
		return "int8"
	case data.Int16:
		return "int16"
	case data.Int32:
		return "int32"
	case data.Int64:
		return "int64"
	case data.Float32:
		return "float"
	case data.Float64:
		return "double"
	case data.Bytes:
		return "bytes"
	case data.String:
		return "string"
	case data.Array:
		return "array"
	case data.Map:
		return "map"
	case data.StructT:
		return "struct"
	}
	return ""
}

var typesByName = map[string]data.Type{
	"boolean": data.Boolean, "int8": data.Int8, "int16": data.Int16, "int32": data.Int32,
	"int64": data.Int64, "float": data.Float32, "double": data.Float64, "bytes": data.Bytes,
	"string": data.String, "array": data.Array, "map": data.Map, "struct": data.StructT,
}

// appendSchemaOrNull appends the schema's JSON, from the cache when it is
// there, or null for no schema.
func (c *JSONConverter) appendSchemaOrNull(dst []byte, s *data.Schema) ([]byte, error) {
	if s == nil {
		return append(dst, "null"...), nil
	}
	if js, ok := c.fromCache.get(s); ok {
		return append(dst, js...), nil
	}
	start := len(dst)
	dst, err := c.appendSchema(dst, s)
	if err != nil {
		return nil, err
	}
	c.fromCache.put(s, append([]byte(nil), dst[start:]...))
	return dst, nil
}

func (c *JSONConverter) appendSchema(dst []byte, s *data.Schema) ([]byte, error) {
	name := typeName(s.Type)
	if name == "" {
		return nil, data.Errorf("Couldn't translate unsupported schema type %s.", s)
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, name...)
	dst = append(dst, '"')
	var err error
	switch s.Type {
	case data.Array:
		dst = append(dst, `,"items":`...)
		dst, err = c.appendSchemaOrNull(dst, s.ValueSchema)
	case data.Map:
		dst = append(dst, `,"keys":`...)
		if dst, err = c.appendSchemaOrNull(dst, s.KeySchema); err == nil {
			dst = append(dst, `,"values":`...)
			dst, err = c.appendSchemaOrNull(dst, s.ValueSchema)
		}
	case data.StructT:
		dst = append(dst, `,"fields":[`...)
		for i, f := range s.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			if f.Schema == nil {
				return nil, data.Errorf("Field %q of %s has no schema", f.Name, s)
			}
			if dst, err = c.appendSchemaOrNull(dst, f.Schema); err != nil {
				return nil, err
			}
			dst = append(dst[:len(dst)-1], `,"field":`...) // reopen the object
			dst = appendJSONString(dst, f.Name)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"optional":`...)
	dst = strconv.AppendBool(dst, s.Optional)
	if s.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, s.Name)
	}
	if s.Version != nil {
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, int64(*s.Version), 10)
	}
	if s.Doc != "" {
		dst = append(dst, `,"doc":`...)
		dst = appendJSONString(dst, s.Doc)
	}
	if len(s.Parameters) > 0 { // Kafka Connect never writes empty parameters
		dst = append(dst, `,"parameters":{`...)
		for i, k := range s.ParameterKeys() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONString(dst, s.Parameters[k])
		}
		dst = append(dst, '}')
	}
	if s.Default != nil {
		dst = append(dst, `,"default":`...)
		if dst, err = c.appendValue(dst, s, s.Default); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// asConnectSchema reads a schema's JSON as JsonConverter.asConnectSchema
// does; JSON null is no schema.
func (c *JSONConverter) asConnectSchema(n *node) (*data.Schema, error) {
	if n.kind == kNull {
		return nil, nil
	}
	tn := n.get("type")
	if n.kind != kObject || tn == nil || tn.kind != kString {
		return nil, data.Errorf("Schema must contain 'type' field")
	}
	t, ok := typesByName[tn.str]
	if !ok {
		return nil, data.Errorf("Unknown schema type: %s", tn.str)
	}
	s := &data.Schema{Type: t}
	var err error
	switch t {
	case data.Array:
		items := n.get("items")
		if items == nil || items.kind == kNull {
			return nil, data.Errorf("Array schema did not specify the element type")
		}
		if s.ValueSchema, err = c.asConnectSchema(items); err != nil {
			return nil, err
		}
	case data.Map:
		err = c.mapSchema(n, s)
	case data.StructT:
		err = c.structFields(n, s)
	}
	if err != nil {
		return nil, err
	}
	if o := n.get("optional"); o != nil && o.kind == kBool && o.b {
		s.Optional = true
	}
	if nn := n.get("name"); nn != nil && nn.kind == kString {
		s.Name = nn.str
	}
	if vn := n.get("version"); vn != nil && vn.kind == kNumber && vn.integral {
		v, err := strconv.ParseInt(vn.str, 10, 32)
		if err != nil {
			return nil, data.Errorf("Schema version %s is out of range", vn.str)
		}
		s.Version = new(int32(v))
	}
	if dn := n.get("doc"); dn != nil && dn.kind == kString {
		s.Doc = dn.str
	}
	if pn := n.get("parameters"); pn != nil && pn.kind == kObject && len(pn.keys) > 0 {
		for i, k := range pn.keys {
			if pn.elems[i].kind != kString {
				return nil, data.Errorf("Schema parameters must have string values.")
			}
			s.SetParameter(k, pn.elems[i].str)
		}
	}
	if dn := n.get("default"); dn != nil {
		def, err := c.toConnect(s, dn)
		if err != nil {
			return nil, err
		}
		if err := data.Validate(s, def); err != nil {
			return nil, data.Errorf("Invalid default value: %w", err)
		}
		s.Default = def
	}
	return s, nil
}

func (c *JSONConverter) mapSchema(n *node, s *data.Schema) error {
	kn, vn := n.get("keys"), n.get("values")
	if kn == nil {
		return data.Errorf("Map schema did not specify the key type")
	}
	if vn == nil {
		return data.Errorf("Map schema did not specify the value type")
	}
	var err error
	if s.KeySchema, err = c.asConnectSchema(kn); err != nil {
		return err
	}
	if s.ValueSchema, err = c.asConnectSchema(vn); err != nil {
		return err
	}
	switch {
	case s.KeySchema == nil:
		return data.Errorf("keySchema cannot be null.")
	case s.ValueSchema == nil:
		return data.Errorf("valueSchema cannot be null.")
	}
	return nil
}

func (c *JSONConverter) structFields(n *node, s *data.Schema) error {
	fields := n.get("fields")
	if fields == nil || fields.kind != kArray {
		return data.Errorf("Struct schema's \"fields\" argument is not an array.")
	}
	s.Fields = make([]data.Field, 0, len(fields.elems))
	seen := make(map[string]bool, len(fields.elems))
	for i := range fields.elems {
		fn := &fields.elems[i]
		name := fn.get("field")
		if fn.kind != kObject || name == nil || name.kind != kString {
			return data.Errorf("Struct schema's field name not specified properly")
		}
		fs, err := c.asConnectSchema(fn)
		if err != nil {
			return err
		}
		switch {
		case name.str == "":
			return data.Errorf("fieldName cannot be null.")
		case seen[name.str]:
			return data.Errorf("Cannot create field because of field name duplication %s", name.str)
		}
		seen[name.str] = true
		s.Fields = append(s.Fields, data.Field{Name: name.str, Index: len(s.Fields), Schema: fs})
	}
	return nil
}
