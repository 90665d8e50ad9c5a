// Runs Kafka Connect's own transforms and predicates on the cases of a
// file and prints what JsonConverter makes of the results, one JSON line
// per case; golden/transforms_integration_test.go runs kcd's on the same
// cases and compares. Run: java -cp '<Kafka Connect libs>/*' Golden.java CASES
//
// A case: {"name", "schemas" (JsonConverter schemas.enable), "config"
// (transforms/predicates settings as in a connector config), "topic",
// "key", "value" (JSON text, null for a null), "headers" ([[name, JSON
// text]]), "timestamp" (ms or null), "source" (a SourceRecord, else a
// SinkRecord at partition 0, offset 42)}.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

public class Golden {
    static final ObjectMapper M = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            JsonNode c = M.readTree(line);
            ObjectNode out = M.createObjectNode();
            out.put("name", c.get("name").asText());
            try {
                run(c, out);
            } catch (Throwable e) {
                out.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.println(M.writeValueAsString(out));
        }
    }

    static String text(JsonNode n) { return n == null || n.isNull() ? null : n.asText(); }

    static byte[] bytes(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }

    static Map<String, String> sub(Map<String, String> cfg, String prefix) {
        Map<String, String> out = new HashMap<>();
        for (Map.Entry<String, String> e : cfg.entrySet())
            if (e.getKey().startsWith(prefix)) out.put(e.getKey().substring(prefix.length()), e.getValue());
        return out;
    }

    static List<String> list(String s) {
        List<String> out = new ArrayList<>();
        if (s == null || s.isBlank()) return out;
        for (String p : s.split(",")) out.add(p.trim());
        return out;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static void run(JsonNode c, ObjectNode out) throws Exception {
        out.put("stage", "input");
        boolean schemas = c.get("schemas").asBoolean();
        JsonConverter keyConv = new JsonConverter(), valueConv = new JsonConverter(), headerConv = new JsonConverter();
        keyConv.configure(Map.of("schemas.enable", String.valueOf(schemas)), true);
        valueConv.configure(Map.of("schemas.enable", String.valueOf(schemas)), false);
        headerConv.configure(Map.of("schemas.enable", String.valueOf(schemas), "converter.type", "header"));
        String topic = c.get("topic").asText();
        SchemaAndValue k = keyConv.toConnectData(topic, bytes(text(c.get("key"))));
        SchemaAndValue v = valueConv.toConnectData(topic, bytes(text(c.get("value"))));
        ConnectHeaders hs = new ConnectHeaders();
        if (c.has("headers"))
            for (JsonNode h : c.get("headers")) {
                String name = h.get(0).asText();
                SchemaAndValue hv = headerConv.toConnectData(topic, bytes(text(h.get(1))));
                hs.add(name, hv);
            }
        Long ts = c.hasNonNull("timestamp") ? c.get("timestamp").asLong() : null;
        ConnectRecord r;
        if (c.path("source").asBoolean())
            r = new SourceRecord(Map.of("p", 1), Map.of("o", 1), topic, null, k.schema(), k.value(), v.schema(), v.value(), ts, hs);
        else
            r = new SinkRecord(topic, 0, k.schema(), k.value(), v.schema(), v.value(), 42L,
                ts, ts == null ? org.apache.kafka.common.record.TimestampType.NO_TIMESTAMP_TYPE : org.apache.kafka.common.record.TimestampType.CREATE_TIME, hs);

        out.put("stage", "transform");
        Map<String, String> cfg = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("config").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            cfg.put(e.getKey(), e.getValue().asText());
        }
        Map<String, Predicate> preds = new HashMap<>();
        for (String a : list(cfg.get("predicates"))) {
            Predicate p = (Predicate) Class.forName(cfg.get("predicates." + a + ".type")).getDeclaredConstructor().newInstance();
            Map<String, String> pc = sub(cfg, "predicates." + a + ".");
            pc.remove("type");
            p.configure(pc);
            preds.put(a, p);
        }
        for (String a : list(cfg.get("transforms"))) {
            String prefix = "transforms." + a + ".";
            Transformation t = (Transformation) Class.forName(cfg.get(prefix + "type")).getDeclaredConstructor().newInstance();
            Map<String, String> tc = sub(cfg, prefix);
            tc.remove("type");
            String pa = tc.remove("predicate");
            boolean negate = Boolean.parseBoolean(tc.remove("negate"));
            t.configure(tc);
            if (pa != null && preds.get(pa).test(r) == negate) continue;
            r = t.apply(r);
            if (r == null) {
                out.remove("stage");
                out.put("dropped", true);
                return;
            }
        }
        out.put("stage", "output");
        out.put("topic", r.topic());
        out.put("key", str(keyConv.fromConnectData(r.topic(), r.keySchema(), r.key())));
        out.put("value", str(valueConv.fromConnectData(r.topic(), r.valueSchema(), r.value())));
        ArrayNode ho = out.putArray("headers");
        for (Header h : (Iterable<Header>) r.headers()) {
            ArrayNode pair = ho.addArray();
            pair.add(h.key());
            pair.add(str(headerConv.fromConnectData(r.topic(), h.schema(), h.value())));
        }
        out.put("timestamp", r.timestamp());
        out.remove("stage");
    }

    static String str(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }
}
