// Capture runs Kafka Connect's real JsonConverter over the cases of
// kcd's golden test and writes one fixture per case: what
// fromConnectData wrote (or the error it threw) for a schema and value the
// Go test rebuilds by the case name, and what toConnectData read from
// given bytes. Run it through ../capture.sh:
//
//   java -cp '<Kafka Connect libs>/*' Capture.java <output dir>
//
// It is a test tool: Java is only the peer the Go converter is checked
// against.

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.json.JsonConverter;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TimeZone;

public class Capture {
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    static Path dir;
    static int count;

    public static void main(String[] args) throws Exception {
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
        dir = Path.of(args[0]);
        Files.createDirectories(dir);
        try (var old = Files.list(dir)) {
            for (Path p : (Iterable<Path>) old::iterator)
                if (p.toString().endsWith(".json")) Files.delete(p);
        }
        primitives();
        nullsAndDefaults();
        collections();
        structs();
        logicalTypes();
        schemaless();
        reads();
        System.out.println(count + " fixtures written to " + dir);
    }

    // ---- fixture writing ------------------------------------------------------------------

    /** A converter configured from "k=v,k=v". */
    static JsonConverter converter(String config) {
        Map<String, String> conf = new LinkedHashMap<>();
        for (String kv : config.split(",(?=[a-z.]+=)"))
            if (!kv.isEmpty()) conf.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        JsonConverter c = new JsonConverter();
        c.configure(conf, false);
        return c;
    }

    static Map<String, Object> fixture(String name, String direction, String config) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("case", name);
        f.put("direction", direction);
        f.put("config", config);
        f.put("java_version", System.getProperty("java.version"));
        f.put("kafka_version", AppInfoParser.getVersion());
        return f;
    }

    static void save(String name, Map<String, Object> f) {
        try {
            Files.write(dir.resolve(name + ".json"), (JSON.writeValueAsString(f) + "\n").getBytes(StandardCharsets.UTF_8));
            count++;
        } catch (Exception e) {
            throw new RuntimeException(name, e);
        }
    }

    static String error(Throwable e) {
        StringBuilder sb = new StringBuilder(e.getClass().getSimpleName() + ": " + e.getMessage());
        for (Throwable c = e.getCause(); c != null; c = c.getCause())
            sb.append(" | caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        return sb.toString();
    }

    /** Records what fromConnectData writes for schema and value. */
    static void write(String name, String config, Schema schema, Object value) {
        write(name, config, schema, value, null);
    }

    /** As write; input is data the Go test needs to rebuild the value (e.g. float bits). */
    static void write(String name, String config, Schema schema, Object value, Object input) {
        Map<String, Object> f = fixture(name, "fromConnectData", config);
        if (input != null) f.put("input", input);
        try {
            byte[] out = converter(config).fromConnectData("topic", schema, value);
            putBytes(f, "output", out);
        } catch (Exception e) {
            f.put("error", error(e));
        }
        save(name, f);
    }

    static void putBytes(Map<String, Object> f, String key, byte[] b) {
        if (b == null) {
            f.put(key, null);
            return;
        }
        String s = new String(b, StandardCharsets.UTF_8);
        if (Arrays.equals(s.getBytes(StandardCharsets.UTF_8), b)) f.put(key, s);
        else f.put(key + "_base64", Base64.getEncoder().encodeToString(b));
    }

    /**
     * Records what toConnectData reads from input: the class of the value and the
     * schema and value written back by a converter with schemas, NUMERIC decimals and
     * no null replacement, or the error.
     */
    static void read(String name, String config, String input) {
        readBytes(name, config, input == null ? null : input.getBytes(StandardCharsets.UTF_8));
    }

    static void readBytes(String name, String config, byte[] input) {
        Map<String, Object> f = fixture(name, "toConnectData", config);
        putBytes(f, "input", input);
        try {
            SchemaAndValue sv = converter(config).toConnectData("topic", input);
            f.put("value_class", sv.value() == null ? null : sv.value().getClass().getName());
            try {
                JsonConverter dump = converter("decimal.format=NUMERIC,replace.null.with.default=false");
                putBytes(f, "result", dump.fromConnectData("topic", sv.schema(), sv.value()));
            } catch (Exception e) {
                f.put("result_error", error(e));
            }
        } catch (Exception e) {
            f.put("error", error(e));
        }
        save(name, f);
    }

    // ---- helpers ----------------------------------------------------------------------------

    static Schema array(Schema elem) { return SchemaBuilder.array(elem).build(); }
    static Schema map(Schema k, Schema v) { return SchemaBuilder.map(k, v).build(); }

    /**
     * A HashMap of k1, v1, k2, v2…, put in that order. The cases put keys sorted: keys that share
     * a bucket iterate in insertion order, which a Go map does not keep, so kcd assumes sorted.
     */
    static Map<Object, Object> hashMap(Object... kv) {
        Map<Object, Object> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    static final Schema POINT = SchemaBuilder.struct().name("com.example.Point")
            .field("x", Schema.INT32_SCHEMA).field("y", Schema.INT32_SCHEMA).build();

    static Struct point(int x, int y) { return new Struct(POINT).put("x", x).put("y", y); }

    static java.util.Date day(long days) { return new java.util.Date(days * 86400000L); }
    static java.util.Date millis(long ms) { return new java.util.Date(ms); }

    // ---- fromConnectData cases --------------------------------------------------------------

    static void primitives() {
        write("boolean_true", "", Schema.BOOLEAN_SCHEMA, true);
        write("boolean_false", "", Schema.BOOLEAN_SCHEMA, false);
        write("int8_min", "", Schema.INT8_SCHEMA, Byte.MIN_VALUE);
        write("int8_max", "", Schema.INT8_SCHEMA, Byte.MAX_VALUE);
        write("int16_min", "", Schema.INT16_SCHEMA, Short.MIN_VALUE);
        write("int16_max", "", Schema.INT16_SCHEMA, Short.MAX_VALUE);
        write("int32_min", "", Schema.INT32_SCHEMA, Integer.MIN_VALUE);
        write("int32_max", "", Schema.INT32_SCHEMA, Integer.MAX_VALUE);
        write("int32_zero", "", Schema.INT32_SCHEMA, 0);
        write("int64_min", "", Schema.INT64_SCHEMA, Long.MIN_VALUE);
        write("int64_max", "", Schema.INT64_SCHEMA, Long.MAX_VALUE);
        write("float32_one", "", Schema.FLOAT32_SCHEMA, 1.0f);
        write("float64_one", "", Schema.FLOAT64_SCHEMA, 1.0);
        write("float64_1e10", "", Schema.FLOAT64_SCHEMA, 1e10);
        write("float32_values", "", array(Schema.FLOAT32_SCHEMA), List.of(0f, -0f, 1f, -1.5f, 0.1f, 1e-3f,
                9.999e-4f, 1e7f, 9999999f, 1e10f, Float.MAX_VALUE, Float.MIN_VALUE, Float.MIN_NORMAL, 16777216f,
                123456.79f, (float) Math.PI, 1e-5f, 100f, 3.4e38f));
        write("float64_values", "", array(Schema.FLOAT64_SCHEMA), List.of(0.0, -0.0, 1.0, -1.5, 0.1, 0.001,
                9.99e-4, 1e7, 9999999.0, 1e10, 1e21, 1e22, 1e23, Double.MAX_VALUE, Double.MIN_VALUE,
                Double.MIN_NORMAL, 9007199254740993.0, 123456789.123, Math.PI, Math.E, -2.5e-300, 100.0,
                1234567.0, 12345678.0, 0.5, 1e-5, 2e-3, 4.35, 0.3, 2.0e-7, 5.0e-324));
        write("float64_special", "", array(Schema.FLOAT64_SCHEMA),
                List.of(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY));
        write("float32_special", "", array(Schema.FLOAT32_SCHEMA),
                List.of(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY));
        write("float64_nan_schemaless", "schemas.enable=false", null, Double.NaN);
        sweeps();

        write("string_simple", "", Schema.STRING_SCHEMA, "hello");
        write("string_empty", "", Schema.STRING_SCHEMA, "");
        write("string_unicode", "", Schema.STRING_SCHEMA, "héllo wörld ✓ 𝄞 日本語");
        write("string_escapes", "", Schema.STRING_SCHEMA, "\u0000\u0001\u0007\b\t\n\u000b\f\r\u001f \u007f"
                + " \"q\" back\\slash /slash <html>&amp; \u2028\u2029 \ufeff end");

        byte[] all = new byte[256];
        for (int i = 0; i < all.length; i++) all[i] = (byte) i;
        write("bytes_empty", "", Schema.BYTES_SCHEMA, new byte[0]);
        write("bytes_small", "", Schema.BYTES_SCHEMA, new byte[] {0, 1, 2, 3, (byte) 255, (byte) 254, (byte) 128, 127});
        write("bytes_pad1", "", Schema.BYTES_SCHEMA, new byte[] {(byte) 0xfb});
        write("bytes_pad2", "", Schema.BYTES_SCHEMA, new byte[] {(byte) 0xfb, (byte) 0xff});
        write("bytes_all", "", Schema.BYTES_SCHEMA, all);
    }

    /** Many doubles and floats, passed to Go as their bits. */
    static void sweeps() {
        Random r = new Random(20240229);
        List<Object> doubles = new ArrayList<>();
        List<String> doubleBits = new ArrayList<>();
        List<Object> floats = new ArrayList<>();
        List<String> floatBits = new ArrayList<>();
        for (int i = 0; doubles.size() < 400; i++) {
            double d;
            switch (i % 5) {
                case 0: d = Double.longBitsToDouble(r.nextLong()); break;
                case 1: d = r.nextDouble() * Math.pow(10, r.nextInt(40) - 20); break;
                case 2: d = (double) r.nextInt(10000000) / Math.pow(10, r.nextInt(9)); break;
                case 3: d = Math.scalb(1.0, r.nextInt(2098) - 1074); break;
                default: d = r.nextGaussian() * 1e6; break;
            }
            if (Double.isNaN(d) || Double.isInfinite(d)) continue;
            doubles.add(d);
            doubleBits.add(Long.toHexString(Double.doubleToRawLongBits(d)));
            float f = i % 2 == 0 ? (float) d : Float.intBitsToFloat(r.nextInt());
            if (Float.isNaN(f) || Float.isInfinite(f)) continue;
            floats.add(f);
            floatBits.add(Integer.toHexString(Float.floatToRawIntBits(f)));
        }
        write("float64_sweep", "", array(Schema.FLOAT64_SCHEMA), doubles, doubleBits);
        write("float32_sweep", "", array(Schema.FLOAT32_SCHEMA), floats, floatBits);
    }

    static void nullsAndDefaults() {
        write("tombstone", "", null, null);
        write("tombstone_schemaless", "schemas.enable=false", null, null);
        write("optional_null_int32", "", Schema.OPTIONAL_INT32_SCHEMA, null);
        write("optional_null_string", "", Schema.OPTIONAL_STRING_SCHEMA, null);
        write("optional_null_no_envelope", "schemas.enable=false", Schema.OPTIONAL_INT32_SCHEMA, null);
        write("required_null_error", "", Schema.INT32_SCHEMA, null);
        write("null_schema_value", "", null, 42L);

        Schema optString = SchemaBuilder.string().optional().defaultValue("dflt").build();
        write("required_null_default", "", SchemaBuilder.int32().defaultValue(42).build(), null);
        write("optional_default_null", "", optString, null);
        write("optional_default_null_noreplace", "replace.null.with.default=false", optString, null);
        write("optional_default_set", "", optString, "given");
        write("required_default_null_noreplace", "replace.null.with.default=false",
                SchemaBuilder.int32().defaultValue(7).build(), null);

        Schema defaults = SchemaBuilder.struct().name("com.example.Defaults")
                .field("b", SchemaBuilder.bool().optional().defaultValue(true).build())
                .field("i8", SchemaBuilder.int8().optional().defaultValue((byte) -8).build())
                .field("i16", SchemaBuilder.int16().optional().defaultValue((short) -16).build())
                .field("i32", SchemaBuilder.int32().optional().defaultValue(32).build())
                .field("i64", SchemaBuilder.int64().optional().defaultValue(-64L).build())
                .field("f32", SchemaBuilder.float32().optional().defaultValue(1.5f).build())
                .field("f64", SchemaBuilder.float64().optional().defaultValue(2.5).build())
                .field("s", SchemaBuilder.string().optional().defaultValue("str").build())
                .field("by", SchemaBuilder.bytes().optional().defaultValue(new byte[] {1, 2, 3}).build())
                .field("arr", SchemaBuilder.array(Schema.INT32_SCHEMA).optional().defaultValue(List.of(1, 2)).build())
                .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).optional()
                        .defaultValue(hashMap("a", 1)).build())
                .field("dec", Decimal.builder(2).optional().defaultValue(new BigDecimal("1.23")).build())
                .field("date", Date.builder().optional().defaultValue(day(19000)).build())
                .field("time", Time.builder().optional().defaultValue(millis(45296789)).build())
                .field("ts", Timestamp.builder().optional().defaultValue(millis(1709164800123L)).build())
                .build();
        write("defaults_all", "", defaults, new Struct(defaults));
        write("defaults_all_noreplace", "replace.null.with.default=false", defaults, new Struct(defaults));
        write("defaults_all_numeric", "decimal.format=NUMERIC", defaults, new Struct(defaults));

        write("schema_metadata", "", SchemaBuilder.int32().name("com.example.Id").version(3).doc("an id")
                .parameter("b", "2").parameter("a", "1").parameter("c", "3").build(), 5);
        write("schema_empty_parameters", "", SchemaBuilder.string().parameters(Map.of()).build(), "x");
        write("schema_metadata_escapes", "", SchemaBuilder.string().name("n\"ame").doc("line1\nline2\t\u00e9")
                .parameter("k\"", "v\\").build(), "x");
    }

    static void collections() {
        write("array_int32", "", array(Schema.INT32_SCHEMA), List.of(1, 2, 3));
        write("array_empty", "", array(Schema.INT32_SCHEMA), List.of());
        write("array_optional_elements", "", array(Schema.OPTIONAL_INT32_SCHEMA), Arrays.asList(1, null, 3));
        write("array_nested", "", array(array(Schema.STRING_SCHEMA)),
                List.of(List.of("a"), List.of(), List.of("b", "c")));
        write("array_of_structs", "", array(POINT), List.of(point(1, 2), point(3, 4)));
        write("array_required_null_element", "", array(Schema.INT32_SCHEMA), Arrays.asList(1, null));
        write("array_optional_null", "", SchemaBuilder.array(Schema.INT32_SCHEMA).optional().build(), null);

        write("map_string_keys_one", "", map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA), hashMap("a", 1));
        write("map_string_keys_many", "", map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA), hashMap(
                "alpha", 1, "beta", 2, "delta", 4, "epsilon", 5, "eta", 7, "gamma", 3, "iota", 9, "kappa", 10,
                "lambda", 11, "mu", 12, "nu", 13, "theta", 8, "xi", 14, "zeta", 6));
        write("map_string_keys_collide", "", map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA), hashMap(
                "Aa", 1, "AaAa", 2, "AaBB", 3, "BB", 4, "BBAa", 5, "BBBB", 6));
        write("map_int_keys", "", map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA),
                hashMap(-3, "minus three", 1, "one", 2, "two", 100000, "big"));
        write("map_empty_string_keys", "", map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA), hashMap());
        write("map_empty_int_keys", "", map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA), hashMap());
        write("map_of_maps", "", map(Schema.STRING_SCHEMA, map(Schema.INT64_SCHEMA, Schema.BOOLEAN_SCHEMA)),
                hashMap("x", hashMap(1L, true, 2L, false), "y", hashMap()));
        write("map_struct_values", "", map(Schema.STRING_SCHEMA, POINT), hashMap("p", point(1, 2), "q", point(-1, 0)));
        write("map_optional_values", "", map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
                hashMap("a", null, "b", "x"));
        write("map_boolean_keys", "", map(Schema.BOOLEAN_SCHEMA, Schema.INT8_SCHEMA),
                hashMap(false, (byte) 0, true, (byte) 1));
        write("map_int64_keys", "", map(Schema.INT64_SCHEMA, Schema.STRING_SCHEMA), hashMap(
                Long.MIN_VALUE, "min", -1L, "minus one", 0L, "zero", 42L, "answer", Long.MAX_VALUE, "max"));
        write("map_float64_keys", "", map(Schema.FLOAT64_SCHEMA, Schema.STRING_SCHEMA),
                hashMap(-0.0, "b", 0.1, "d", 1.5, "a", 1e10, "c"));
        write("map_decimal_keys", "", map(Decimal.schema(2), Schema.STRING_SCHEMA), hashMap(
                new BigDecimal("-2.50"), "b", new BigDecimal("0.00"), "z", new BigDecimal("1.00"), "a",
                new BigDecimal("123456789012345678901234.56"), "c"));
        write("map_date_keys", "", map(Date.SCHEMA, Schema.STRING_SCHEMA), hashMap(day(0), "epoch", day(19000), "later"));
        write("map_struct_keys", "", map(POINT, Schema.STRING_SCHEMA), hashMap(point(1, 2), "p"));
    }

    static void structs() {
        Schema flat = SchemaBuilder.struct().name("com.example.Flat")
                .field("b", Schema.BOOLEAN_SCHEMA).field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA)
                .field("i32", Schema.INT32_SCHEMA).field("i64", Schema.INT64_SCHEMA)
                .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
                .field("s", Schema.STRING_SCHEMA).field("by", Schema.BYTES_SCHEMA).build();
        write("struct_flat", "", flat, new Struct(flat).put("b", true).put("i8", (byte) 8).put("i16", (short) 16)
                .put("i32", 32).put("i64", 64L).put("f32", 3.25f).put("f64", -6.5).put("s", "text")
                .put("by", new byte[] {9, 8, 7}));

        Schema inner = SchemaBuilder.struct().name("com.example.Inner").optional()
                .field("label", Schema.OPTIONAL_STRING_SCHEMA).build();
        Schema outer = SchemaBuilder.struct().name("com.example.Outer")
                .field("id", Schema.INT64_SCHEMA).field("inner", inner).field("missing", inner)
                .field("points", array(POINT)).build();
        write("struct_nested", "", outer, new Struct(outer).put("id", 1L)
                .put("inner", new Struct(inner).put("label", "in")).put("points", List.of(point(5, 6))));

        Schema opt = SchemaBuilder.struct().field("a", Schema.OPTIONAL_STRING_SCHEMA)
                .field("b", Schema.OPTIONAL_INT64_SCHEMA).build();
        write("struct_optional_fields_unset", "", opt, new Struct(opt));
        Schema order = SchemaBuilder.struct().field("z", Schema.INT32_SCHEMA).field("a", Schema.INT32_SCHEMA)
                .field("m", Schema.INT32_SCHEMA).build();
        write("struct_field_order", "", order, new Struct(order).put("a", 1).put("m", 2).put("z", 3));
        write("struct_optional_null", "", inner, null);
        Schema names = SchemaBuilder.struct().field("ünïcödé", Schema.INT32_SCHEMA)
                .field("with space", Schema.INT32_SCHEMA).field("quote\"d", Schema.INT32_SCHEMA).build();
        write("struct_field_names", "", names, new Struct(names).put("ünïcödé", 1).put("with space", 2).put("quote\"d", 3));
        Schema supp = SchemaBuilder.struct().name("n\uD834\uDD1E").doc("d\uD834\uDD1E")
                .field("clef \uD834\uDD1E", Schema.STRING_SCHEMA)
                .field("m", map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA)).build();
        write("supplementary_characters", "", supp, new Struct(supp).put("clef \uD834\uDD1E", "\uD834\uDD1E")
                .put("m", hashMap("a", "\uD834\uDD1E", "\uD834\uDD1E", "x")));
        Schema meta = SchemaBuilder.struct().name("com.example.Meta").version(2).doc("documented")
                .parameter("p", "q").field("v", Schema.INT32_SCHEMA).build();
        write("struct_metadata", "", meta, new Struct(meta).put("v", 1));

        Schema other = SchemaBuilder.struct().name("com.example.Point").field("x", Schema.INT32_SCHEMA).build();
        write("struct_schema_mismatch", "", other, point(1, 2));
        Schema pointCopy = SchemaBuilder.struct().name("com.example.Point")
                .field("x", Schema.INT32_SCHEMA).field("y", Schema.INT32_SCHEMA).build();
        write("struct_equal_schema", "", pointCopy, point(7, 8));
        write("struct_required_field_unset", "", POINT, new Struct(POINT).put("x", 1));
        write("wrong_type_error", "", Schema.INT32_SCHEMA, 5L);
    }

    static void logicalTypes() {
        List<Schema> scales = List.of(Decimal.schema(0), Decimal.schema(2), Decimal.schema(10), Decimal.schema(-2));
        List<List<BigDecimal>> values = List.of(
                List.of(bd("0"), bd("1"), bd("-1"), bd("127"), bd("128"), bd("-128"), bd("-129"), bd("255"),
                        bd("256"), bd("32767"), bd("-32768"), bd("9223372036854775807"),
                        bd("-9223372036854775808"), bd("1000000000000000000000000000000"),
                        bd("-1000000000000000000000000000000")),
                List.of(bd("0.00"), bd("1.23"), bd("-1.23"), bd("0.01"), bd("-0.01"), bd("12345678901234567890.12")),
                List.of(new BigDecimal(BigInteger.ONE, 10), bd("-1234.5678901234")),
                List.of(new BigDecimal(BigInteger.valueOf(12), -2), new BigDecimal(BigInteger.ZERO, -2),
                        new BigDecimal(BigInteger.valueOf(-5), -2)));
        String[] names = {"s0", "s2", "s10", "sneg2"};
        for (int i = 0; i < names.length; i++) {
            write("decimal_" + names[i] + "_base64", "", array(scales.get(i)), values.get(i));
            write("decimal_" + names[i] + "_numeric", "decimal.format=NUMERIC", array(scales.get(i)), values.get(i));
        }
        write("decimal_s8_numeric", "decimal.format=NUMERIC", array(Decimal.schema(8)), List.of(
                new BigDecimal(BigInteger.ONE, 8), new BigDecimal(BigInteger.TEN, 8),
                new BigDecimal(BigInteger.valueOf(100000000), 8), new BigDecimal(BigInteger.valueOf(123456789), 8)));
        write("decimal_single", "", Decimal.schema(2), bd("-12.34"));
        write("decimal_numeric_lowercase", "decimal.format=numeric", Decimal.schema(2), bd("-12.34"));
        write("decimal_numeric_scale_mismatch", "decimal.format=NUMERIC", Decimal.schema(2), bd("1.5"));
        write("decimal_base64_scale_mismatch", "", Decimal.schema(2), bd("1.5"));
        write("decimal_optional_null", "", Decimal.builder(2).optional().build(), null);

        write("date_values", "", array(Date.SCHEMA), List.of(day(0), day(19000), day(-1), day(-25567), day(2932896)));
        write("time_values", "", array(Time.SCHEMA), List.of(millis(0), millis(45296789), millis(86399999), millis(86400000)));
        write("timestamp_values", "", array(Timestamp.SCHEMA), List.of(millis(0), millis(1709164800123L), millis(-1),
                millis(-62135596800000L), millis(253402300799999L)));
        write("date_with_time_error", "", Date.SCHEMA, millis(43200000));
        write("time_out_of_range_error", "", Time.SCHEMA, millis(2 * 86400000L));

        Schema logical = SchemaBuilder.struct().name("com.example.Logical")
                .field("date", Date.builder().optional().build()).field("time", Time.builder().optional().build())
                .field("ts", Timestamp.builder().optional().build()).field("dec", Decimal.builder(3).optional().build())
                .field("date_null", Date.builder().optional().build()).field("dec_null", Decimal.builder(3).optional().build())
                .build();
        write("struct_logical", "", logical, new Struct(logical).put("date", day(19000)).put("time", millis(1000))
                .put("ts", millis(1709164800123L)).put("dec", bd("-1.005")));
        write("struct_logical_numeric", "decimal.format=NUMERIC", logical, new Struct(logical).put("date", day(19000))
                .put("time", millis(1000)).put("ts", millis(1709164800123L)).put("dec", bd("-1.005")));
    }

    static BigDecimal bd(String s) { return new BigDecimal(s); }

    static void schemaless() {
        write("schemaless_map", "schemas.enable=false", null, hashMap("count", 5L, "list", Arrays.asList(1L, "a"),
                "name", "x", "nested", hashMap("k", "v"), "none", null, "ok", true, "ratio", 1.5));
        write("schemaless_primitives", "schemas.enable=false", null, Arrays.asList((byte) 1, (short) 2, 3, 4L,
                1.5f, 2.5, true, "s", new byte[] {1, 2}, null));
        write("schemaless_int_keys", "schemas.enable=false", null, hashMap(1, "a", 2, "b"));
        write("schemaless_mixed_keys", "schemas.enable=false", null, hashMap("a", 1L, 2L, "b"));
        write("schemaless_empty_map", "schemas.enable=false", null, hashMap());
        write("schemaless_string", "schemas.enable=false", null, "just a string");
        write("schemaless_nested_lists", "schemas.enable=false", null,
                List.of(List.of(1L, List.of(2L, List.of())), hashMap()));
        write("schemaless_decimal_error", "schemas.enable=false", null, BigDecimal.ONE);
        write("schemaless_struct_error", "schemas.enable=false", null, point(1, 2));
        write("schemaless_with_envelope", "", null, hashMap("a", List.of(1L, 2L)));
        write("struct_no_envelope", "schemas.enable=false", POINT, point(1, 2));
    }

    // ---- toConnectData cases ----------------------------------------------------------------

    static final String S_INT32 = "{\"type\":\"int32\",\"optional\":false}";

    static String env(String schema, String payload) {
        return "{\"schema\":" + schema + ",\"payload\":" + payload + "}";
    }

    static void reads() {
        String noEnv = "schemas.enable=false";
        // the envelope
        read("read_envelope_int32", "", env(S_INT32, "42"));
        read("read_envelope_missing_payload", "", "{\"schema\":" + S_INT32 + "}");
        read("read_envelope_extra_field", "", "{\"schema\":" + S_INT32 + ",\"payload\":1,\"extra\":true}");
        read("read_envelope_array", "", "[1,2]");
        read("read_envelope_scalar", "", "42");
        read("read_envelope_null_schema", "", env("null", "{\"a\":1,\"b\":[1.5,\"x\",null,true]}"));
        read("read_envelope_duplicate_keys", "", "{\"schema\":{\"type\":\"string\"},\"payload\":\"a\",\"payload\":\"b\"}");
        read("read_envelope_reordered", "", "{\"payload\":5,\"schema\":{\"type\":\"int64\"}}");
        read("read_null_input", "", null);
        read("read_empty_input", "", "");
        read("read_empty_input_schemaless", noEnv, "");
        read("read_whitespace_input_schemaless", noEnv, " \n\t ");
        read("read_literal_null", "", "null");
        read("read_literal_null_schemaless", noEnv, "null");
        read("read_trailing_garbage", "", env("null", "1") + " xyz");
        read("read_two_values_schemaless", noEnv, "1 2");
        read("read_number_then_garbage_schemaless", noEnv, "1x");
        read("read_true_then_garbage_schemaless", noEnv, "truex");
        read("read_true_then_bracket_schemaless", noEnv, "true]");
        read("read_bom", "", "\ufeff" + env("null", "1"));
        read("read_invalid_json", "", "{\"schema\":");
        readBytes("read_invalid_utf8", noEnv, new byte[] {'"', (byte) 0xff, '"'});
        readBytes("read_utf16_schemaless", noEnv, "{\"a\":1}".getBytes(StandardCharsets.UTF_16LE));
        read("read_comment_schemaless", noEnv, "/*x*/1");
        read("read_single_quotes_schemaless", noEnv, "'a'");
        read("read_nan_token_schemaless", noEnv, "NaN");
        read("read_plus_number_schemaless", noEnv, "[+1]");
        read("read_dot_number_schemaless", noEnv, "[.5]");
        read("read_trailing_dot_schemaless", noEnv, "[1.]");
        read("read_leading_zeros_schemaless", noEnv, "[007,-007,00.5,0e1]");
        read("read_control_char_schemaless", noEnv, "\"a\tb\"");
        read("read_bad_escape_schemaless", noEnv, "\"a\\qb\"");
        read("read_escapes_schemaless", noEnv, "\"\\u00e9\\ud834\\udd1e\\n\\/\\\\\\\"\\b\\f\\r\\t\"");
        read("read_depth_1000_schemaless", noEnv, "[".repeat(1000) + "]".repeat(1000));
        read("read_depth_1001_schemaless", noEnv, "[".repeat(1001) + "]".repeat(1001));
        read("read_number_1000_digits_schemaless", noEnv, "[" + "9".repeat(1000) + "]");
        read("read_number_1001_digits_schemaless", noEnv, "[" + "9".repeat(1001) + "]");
        read("read_float_1000_digits_schemaless", noEnv, "[-0." + "1".repeat(999) + "]");
        read("read_float_1001_digits_schemaless", noEnv, "[0." + "1".repeat(1000) + "]");
        read("read_float_1000_digits_exponent_schemaless", noEnv, "[1." + "1".repeat(997) + "e-10]");
        read("read_float_1001_digits_exponent_schemaless", noEnv, "[1." + "1".repeat(998) + "e-10]");

        // schemaless inference
        read("read_schemaless_object", noEnv, "{\"b\":1,\"a\":2.5,\"c\":[true,null,\"x\"],\"d\":{\"e\":{}}}");
        read("read_schemaless_many_keys", noEnv, "{\"alpha\":1,\"beta\":2,\"gamma\":3,\"delta\":4,\"epsilon\":5,"
                + "\"zeta\":6,\"eta\":7,\"theta\":8,\"iota\":9,\"kappa\":10,\"lambda\":11,\"mu\":12,\"nu\":13,\"xi\":14}");
        read("read_schemaless_numbers", noEnv, "[0,-0,1e2,1E-2,1.0,-0.0,2147483648,9223372036854775807,"
                + "0.1000000000000000055511151231257827,1e400,-1e400,1e-400,-1e-400,123456789012345678901234567890.5]");
        read("read_schemaless_big_integer", noEnv, "12345678901234567890");
        read("read_schemaless_duplicate_keys", noEnv, "{\"a\":1,\"b\":2,\"a\":3}");

        // schemas
        String allPrims = "{\"type\":\"struct\",\"fields\":[{\"type\":\"boolean\",\"field\":\"b\"},{\"type\":\"int8\",\"field\":\"i8\"},"
                + "{\"type\":\"int16\",\"field\":\"i16\"},{\"type\":\"int32\",\"field\":\"i32\"},{\"type\":\"int64\",\"field\":\"i64\"},"
                + "{\"type\":\"float\",\"field\":\"f32\"},{\"type\":\"double\",\"field\":\"f64\"},{\"type\":\"string\",\"field\":\"s\"},"
                + "{\"type\":\"bytes\",\"field\":\"by\"}],\"optional\":false,\"name\":\"all\"}";
        read("read_schema_all_primitives", "", env(allPrims, "{\"b\":true,\"i8\":-8,\"i16\":300,\"i32\":-70000,\"i64\":"
                + "9007199254740993,\"f32\":0.1,\"f64\":0.1,\"s\":\"str\",\"by\":\"AQID\"}"));
        read("read_schema_float32_name", "", env("{\"type\":\"float32\"}", "1"));
        read("read_schema_float64_name", "", env("{\"type\":\"float64\"}", "1"));
        read("read_schema_missing_type", "", env("{\"optional\":true}", "1"));
        read("read_schema_type_not_string", "", env("{\"type\":5}", "1"));
        read("read_schema_not_object", "", env("5", "1"));
        read("read_schema_optional_missing", "", env("{\"type\":\"int32\"}", "null"));
        read("read_schema_optional_string", "", env("{\"type\":\"int32\",\"optional\":\"true\"}", "null"));
        read("read_schema_optional_true", "", env("{\"type\":\"int32\",\"optional\":true}", "null"));
        read("read_schema_metadata", "", env("{\"type\":\"string\",\"optional\":false,\"name\":\"n\",\"version\":2,"
                + "\"doc\":\"d\",\"parameters\":{\"z\":\"1\",\"a\":\"2\"}}", "\"v\""));
        read("read_schema_version_string", "", env("{\"type\":\"string\",\"version\":\"1\"}", "\"v\""));
        read("read_schema_version_float", "", env("{\"type\":\"string\",\"version\":1.5}", "\"v\""));
        read("read_schema_name_not_string", "", env("{\"type\":\"string\",\"name\":5,\"doc\":true}", "\"v\""));
        read("read_schema_params_not_string", "", env("{\"type\":\"string\",\"parameters\":{\"a\":1}}", "\"v\""));
        read("read_schema_params_not_object", "", env("{\"type\":\"string\",\"parameters\":[\"a\"]}", "\"v\""));
        read("read_schema_params_empty", "", env("{\"type\":\"string\",\"parameters\":{}}", "\"v\""));
        read("read_schema_default_int", "", env("{\"type\":\"int32\",\"default\":5}", "null"));
        read("read_schema_default_int_noreplace", "replace.null.with.default=false",
                env("{\"type\":\"int32\",\"optional\":true,\"default\":5}", "null"));
        read("read_schema_default_required_noreplace", "replace.null.with.default=false",
                env("{\"type\":\"int32\",\"default\":5}", "null"));
        read("read_schema_default_null_required", "", env("{\"type\":\"int32\",\"default\":null}", "1"));
        read("read_schema_default_null_optional", "", env("{\"type\":\"int32\",\"optional\":true,\"default\":null}", "null"));
        read("read_schema_default_wrong_type", "", env("{\"type\":\"int32\",\"default\":\"x\"}", "null"));
        read("read_schema_default_decimal", "", env("{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\","
                + "\"parameters\":{\"scale\":\"2\"},\"default\":\"AHs=\"}", "null"));
        read("read_schema_default_struct", "", env("{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"field\":\"a\"}],"
                + "\"default\":{\"a\":1}}", "null"));
        read("read_schema_default_array", "", env("{\"type\":\"array\",\"items\":{\"type\":\"int32\"},\"default\":[1,2]}", "null"));
        read("read_schema_array_no_items", "", env("{\"type\":\"array\"}", "[]"));
        read("read_schema_array_null_items", "", env("{\"type\":\"array\",\"items\":null}", "[]"));
        read("read_schema_map_no_keys", "", env("{\"type\":\"map\",\"values\":{\"type\":\"int32\"}}", "{}"));
        read("read_schema_map_no_values", "", env("{\"type\":\"map\",\"keys\":{\"type\":\"int32\"}}", "{}"));
        read("read_schema_map_null_keys", "", env("{\"type\":\"map\",\"keys\":null,\"values\":{\"type\":\"int32\"}}", "{}"));
        read("read_schema_fields_not_array", "", env("{\"type\":\"struct\",\"fields\":{}}", "{}"));
        read("read_schema_field_no_name", "", env("{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\"}]}", "{}"));
        read("read_schema_field_empty_name", "", env("{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"field\":\"\"}]}", "{}"));
        read("read_schema_duplicate_fields", "", env("{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"field\":\"a\"},"
                + "{\"type\":\"string\",\"field\":\"a\"}]}", "{}"));
        read("read_schema_extra_keys", "", env("{\"type\":\"int32\",\"foo\":1,\"items\":{}}", "3"));
        String abc = "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":true,\"field\":\"a\"},"
                + "{\"type\":\"string\",\"default\":\"dflt\",\"field\":\"b\"},{\"type\":\"int64\",\"field\":\"c\"}]}";
        read("read_struct_missing_fields", "", env(abc, "{\"c\":1}"));
        read("read_struct_missing_required", "", env(abc, "{\"a\":1}"));
        read("read_struct_extra_fields", "", env(abc, "{\"c\":1,\"x\":2,\"y\":{}}"));
        read("read_struct_not_object", "", env(abc, "[]"));

        // payloads
        read("read_int32_overflow", "", env("{\"type\":\"int32\"}", "3000000000"));
        read("read_int8_overflow", "", env("{\"type\":\"int8\"}", "300"));
        read("read_int32_fraction", "", env("{\"type\":\"int32\"}", "1.5"));
        read("read_int32_integral_float", "", env("{\"type\":\"int32\"}", "5.0"));
        read("read_int32_exponent", "", env("{\"type\":\"int32\"}", "1e2"));
        read("read_int32_string", "", env("{\"type\":\"int32\"}", "\"5\""));
        read("read_int64_big", "", env("{\"type\":\"int64\"}", "12345678901234567890"));
        read("read_float32_from_int", "", env("{\"type\":\"float\"}", "16777217"));
        read("read_float32_precise", "", env("{\"type\":\"float\"}", "0.1"));
        read("read_float64_negative_zero", "", env("{\"type\":\"double\"}", "-0.0"));
        read("read_float64_nan_string", "", env("{\"type\":\"double\"}", "\"NaN\""));
        read("read_float64_string", "", env("{\"type\":\"double\"}", "\"1.5\""));
        read("read_boolean_number", "", env("{\"type\":\"boolean\"}", "1"));
        read("read_string_number", "", env("{\"type\":\"string\",\"optional\":true}", "5"));
        read("read_string_number_required", "", env("{\"type\":\"string\"}", "5"));
        read("read_bytes_valid", "", env("{\"type\":\"bytes\"}", "\"AAEC/w==\""));
        read("read_bytes_no_padding", "", env("{\"type\":\"bytes\"}", "\"AAEC/w\""));
        read("read_bytes_whitespace", "", env("{\"type\":\"bytes\"}", "\"AAEC /w==\""));
        read("read_bytes_newline", "", env("{\"type\":\"bytes\"}", "\"AAEC\\n/w==\""));
        read("read_bytes_urlsafe", "", env("{\"type\":\"bytes\"}", "\"-_8=\""));
        read("read_bytes_invalid", "", env("{\"type\":\"bytes\"}", "\"!!!!\""));
        read("read_bytes_extra_padding", "", env("{\"type\":\"bytes\"}", "\"AA===\""));
        read("read_bytes_data_after_padding", "", env("{\"type\":\"bytes\"}", "\"AA==AA==\""));
        read("read_bytes_number", "", env("{\"type\":\"bytes\",\"optional\":true}", "5"));
        String dec2 = "{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"2\"}}";
        read("read_decimal_base64", "", env(dec2, "\"AMg=\""));
        read("read_decimal_negative_base64", "", env(dec2, "\"/zg=\""));
        read("read_decimal_numeric", "", env(dec2, "1.50"));
        read("read_decimal_int", "", env(dec2, "5"));
        read("read_decimal_exponent", "", env(dec2, "1.5e3"));
        read("read_decimal_negative_zero", "", env(dec2, "-0.00"));
        read("read_decimal_big", "", env(dec2, "123456789012345678901234567890.123456789"));
        read("read_decimal_empty_base64", "", env(dec2, "\"\""));
        read("read_decimal_boolean", "", env(dec2, "true"));
        read("read_decimal_no_scale", "", env("{\"type\":\"bytes\",\"name\":\"org.apache.kafka.connect.data.Decimal\"}", "\"AQ==\""));
        String date = "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Date\"}";
        String time = "{\"type\":\"int32\",\"name\":\"org.apache.kafka.connect.data.Time\"}";
        String ts = "{\"type\":\"int64\",\"name\":\"org.apache.kafka.connect.data.Timestamp\"}";
        read("read_date", "", env(date, "19000"));
        read("read_date_negative", "", env(date, "-1"));
        read("read_date_float", "", env(date, "1.0"));
        read("read_date_long", "", env(date, "3000000000"));
        read("read_date_string", "", env(date, "\"2024-01-01\""));
        read("read_time", "", env(time, "45296789"));
        read("read_time_end_of_day", "", env(time, "86400000"));
        read("read_time_over", "", env(time, "86400001"));
        read("read_time_negative", "", env(time, "-1"));
        read("read_timestamp", "", env(ts, "1709164800123"));
        read("read_timestamp_negative", "", env(ts, "-62135596800000"));
        read("read_timestamp_float", "", env(ts, "1.5"));
        read("read_timestamp_big", "", env(ts, "12345678901234567890"));
        read("read_logical_on_other_type", "", env("{\"type\":\"string\",\"name\":\"org.apache.kafka.connect.data.Timestamp\"}", "5"));
        String mapSI = "{\"type\":\"map\",\"keys\":{\"type\":\"string\"},\"values\":{\"type\":\"int32\"}}";
        String mapIS = "{\"type\":\"map\",\"keys\":{\"type\":\"int32\"},\"values\":{\"type\":\"string\"}}";
        read("read_map_string_keys", "", env(mapSI, "{\"b\":2,\"a\":1}"));
        read("read_map_string_keys_array", "", env(mapSI, "[[\"a\",1]]"));
        read("read_map_int_keys", "", env(mapIS, "[[2,\"b\"],[1,\"a\"],[2,\"c\"]]"));
        read("read_map_int_keys_object", "", env(mapIS, "{\"1\":\"a\"}"));
        read("read_map_short_entry", "", env(mapIS, "[[1]]"));
        read("read_map_entry_not_array", "", env(mapIS, "[1]"));
        read("read_map_bytes_keys", "", env("{\"type\":\"map\",\"keys\":{\"type\":\"bytes\"},\"values\":{\"type\":\"int32\"}}", "[[\"AQ==\",1]]"));
        String arr = "{\"type\":\"array\",\"items\":{\"type\":\"int32\",\"optional\":true}}";
        read("read_array_nulls", "", env(arr, "[1,null,3]"));
        read("read_array_required_null", "", env("{\"type\":\"array\",\"items\":{\"type\":\"int32\"}}", "[1,null]"));
        read("read_array_object_payload", "", env(arr, "{\"a\":1,\"b\":2}"));
        read("read_array_scalar_payload", "", env(arr, "5"));
        read("read_nested", "", env("{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":[{\"type\":\"array\","
                + "\"items\":{\"type\":\"map\",\"keys\":{\"type\":\"string\"},\"values\":{\"type\":\"double\"}},\"field\":\"l\"}],"
                + "\"field\":\"in\"}]}", "{\"in\":{\"l\":[{\"x\":1.5},{}]}}"));
        String content = "schema.content={\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"field\":\"a\"}]}";
        read("read_schema_content", content, "{\"a\":5}");
        read("read_schema_content_envelope", content, env(S_INT32, "5"));
        read("read_schema_content_schemaless", noEnv + "," + content, "{\"a\":5}");
    }
}
