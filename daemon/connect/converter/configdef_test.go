package converter

import "testing"

// Every converter kcd ships describes its settings, by class or alias;
// SimpleHeaderConverter has none; an unknown class is not described.
func TestConfigDef(t *testing.T) {
	for _, tc := range []struct {
		class string
		keys  int
	}{
		{JSONClass, 6}, {"JsonConverter", 6}, {StringClass, 2}, {ByteArrayClass, 1},
		{BooleanClass, 1}, {ShortClass, 1}, {IntegerClass, 1}, {"Integer", 1}, {LongClass, 1}, {FloatClass, 1}, {DoubleClass, 1},
		{SimpleHeaderConverterClass, 0},
	} {
		def, ok := ConfigDef(tc.class)
		if !ok || len(def) != tc.keys {
			t.Errorf("%s: %d keys, %v; want %d", tc.class, len(def), ok, tc.keys)
			continue
		}
		if tc.keys > 0 && (def[0].Name != "converter.type" || !def[0].Required()) {
			t.Errorf("%s: first key %+v, want the required converter.type", tc.class, def[0])
		}
	}
	if _, ok := ConfigDef("com.example.Nope"); ok {
		t.Error("an unknown class is described")
	}
	if k, _ := jsonConfigDef.Key("schema.content"); k.Required() || k.Default != nil {
		t.Errorf("schema.content: %+v, want optional with a null default", k)
	}
}
