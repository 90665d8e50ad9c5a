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
    byte[] b = JSON.fromConnectData("", null, m);
    return b == null ? ByteString.EMPTY : ByteString.copyFrom(b);
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
