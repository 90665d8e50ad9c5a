package io.kcd.javahost;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.json.JsonConverter;
import org.junit.jupiter.api.Test;

class OffsetJsonTest {
  private static byte[] converter(Map<String, ?> m) {
    JsonConverter c = new JsonConverter();
    c.configure(Map.of("schemas.enable", "false", "converter.type", "key"), true);
    return c.fromConnectData("", null, m);
  }

  private static Map<String, Object> map(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  @Test
  void encodeIsJsonConvertersBytes() {
    List<Map<String, Object>> maps = List.of(
        map("offset", 123456789L),
        map("cluster", "src", "topic", "t-1", "partition", 3),
        map("lsn", 24023128L, "txId", 555L, "snapshot", "INITIAL", "last_snapshot_record", false),
        map("s", (short) 7, "b", (byte) -1, "min", Long.MIN_VALUE),
        map(),
        // Not flat: JsonConverter's own path, same bytes.
        map("d", 1.5),
        map("n", null),
        map("q", "a\"b\\c"),
        map("u", "ü"),
        map("nested", map("a", 1)));
    for (Map<String, Object> m : maps) {
      assertArrayEquals(converter(m), OffsetJson.encode(m).toByteArray(), m.toString());
    }
    assertNotNull(OffsetJson.encodeFlat(maps.get(1)), "a MirrorSource partition takes the flat path");
    assertNull(OffsetJson.encodeFlat(map("d", 1.5)), "a double is left to JsonConverter");
    Map<String, Object> hm = new HashMap<>(maps.get(2));
    assertArrayEquals(converter(hm), OffsetJson.encode(hm).toByteArray(), "iteration order is the map's");
  }
}
