package io.kcd.javahost;

import com.google.protobuf.ByteString;
import java.util.Map;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

/**
 * Source partitions and offsets as Kafka Connect writes them to its offsets
 * topic: JsonConverter with schemas.enable=false over the map.
 */
final class OffsetJson {
  private static final JsonConverter JSON = new JsonConverter();

  static {
    JSON.configure(Map.of("schemas.enable", "false", "converter.type", "key"), true);
  }

  private OffsetJson() {}

  /** The map as schemaless JSON; empty for null. */
  static ByteString encode(Map<String, ?> m) {
    if (m == null) {
      return ByteString.EMPTY;
    }
    ByteString flat = encodeFlat(m);
    if (flat != null) {
      return flat;
    }
    byte[] b = JSON.fromConnectData("", null, m);
    return b == null ? ByteString.EMPTY : ByteString.copyFrom(b);
  }

  /**
   * The bytes JsonConverter writes for a map of plain keys to integers,
   * booleans and plain strings (what offsets almost always are), without its
   * tree of nodes; null for any other map.
   */
  static ByteString encodeFlat(Map<String, ?> m) {
    StringBuilder sb = new StringBuilder(16 + 24 * m.size()).append('{');
    boolean first = true;
    for (Map.Entry<String, ?> e : m.entrySet()) {
      if (!(e.getKey() instanceof String) || !plain(e.getKey())) {
        return null;
      }
      if (!first) {
        sb.append(',');
      }
      first = false;
      sb.append('"').append(e.getKey()).append("\":");
      Object v = e.getValue();
      if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte
          || v instanceof Boolean) {
        sb.append(v);
      } else if (v instanceof String && plain((String) v)) {
        sb.append('"').append((String) v).append('"');
      } else {
        return null;
      }
    }
    return ByteString.copyFromUtf8(sb.append('}').toString());
  }

  /** Printable ASCII without quote or backslash: JSON's and Jackson's escaping leave it as is. */
  private static boolean plain(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
        return false;
      }
    }
    return true;
  }

  /** Schemaless JSON back to a map, as OffsetStorageReaderImpl reads it; null for empty. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> decode(ByteString b) {
    if (b == null || b.isEmpty()) {
      return null;
    }
    SchemaAndValue v = JSON.toConnectData("", b.toByteArray());
    if (v.value() == null) {
      return null;
    }
    if (!(v.value() instanceof Map)) {
      throw new org.apache.kafka.connect.errors.DataException(
          "offset is not a JSON object: " + b.toStringUtf8());
    }
    return (Map<String, Object>) v.value();
  }
}
