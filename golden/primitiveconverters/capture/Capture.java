// Capture writes what Kafka Connect's primitive converters (BooleanConverter,
// ShortConverter, IntegerConverter, LongConverter, FloatConverter,
// DoubleConverter) make of a set of values, and read back from a set of
// byte arrays, as JSON lines into the file named by its argument. Run by
// capture.sh with the Kafka Connect jars on the class path.
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.converters.BooleanConverter;
import org.apache.kafka.connect.converters.DoubleConverter;
import org.apache.kafka.connect.converters.FloatConverter;
import org.apache.kafka.connect.converters.IntegerConverter;
import org.apache.kafka.connect.converters.LongConverter;
import org.apache.kafka.connect.converters.ShortConverter;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.storage.Converter;

public class Capture {
  static final HexFormat HEX = HexFormat.of();

  public static void main(String[] args) throws Exception {
    List<String> out = new ArrayList<>();
    Object[][] cases = {
      {new BooleanConverter(), new Object[] {true, false, null}},
      {new ShortConverter(), new Object[] {(short) 0, (short) 1, (short) -1, Short.MAX_VALUE, Short.MIN_VALUE, (short) 4660, null}},
      {new IntegerConverter(), new Object[] {0, 1, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 123456789, null}},
      {new LongConverter(), new Object[] {0L, 1L, -1L, Long.MAX_VALUE, Long.MIN_VALUE, 1234567890123L, null}},
      {new FloatConverter(), new Object[] {0f, -0f, 1.5f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.MIN_VALUE, Float.MAX_VALUE, 3.14159f, null}},
      {new DoubleConverter(), new Object[] {0d, -0d, 1.5d, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, Double.MAX_VALUE, Math.PI, null}},
    };
    String[] inputs = {"", "00", "01", "02", "ff", "0001", "ffff", "00000001", "7fc00000", "ffffffff", "0000000000000001", "400921fb54442d18", "fff0000000000000", "000000"};
    for (Object[] c : cases) {
      Converter conv = (Converter) c[0];
      conv.configure(Map.of(), false);
      String cls = conv.getClass().getName();
      for (Object v : (Object[]) c[1]) {
        byte[] b = conv.fromConnectData("t", null, v);
        out.add(String.format("{\"op\":\"write\",\"class\":\"%s\",\"value\":%s,\"bytes\":%s}", cls, text(v), b == null ? "null" : "\"" + HEX.formatHex(b) + "\""));
      }
      out.add(read(conv, cls, null));
      for (String in : inputs) {
        out.add(read(conv, cls, HEX.parseHex(in)));
      }
    }
    Files.write(Path.of(args[0]), out);
  }

  static String read(Converter conv, String cls, byte[] in) {
    String inText = in == null ? "null" : "\"" + HEX.formatHex(in) + "\"";
    try {
      SchemaAndValue sv = conv.toConnectData("t", in);
      return String.format("{\"op\":\"read\",\"class\":\"%s\",\"bytes\":%s,\"schema\":\"%s\",\"value\":%s}", cls, inText, sv.schema().type(), text(sv.value()));
    } catch (Exception e) {
      return String.format("{\"op\":\"read\",\"class\":\"%s\",\"bytes\":%s,\"error\":true}", cls, inText);
    }
  }

  // text is a value as JSON: floats by their raw bits (hex), so that NaN,
  // infinities and -0 survive.
  static String text(Object v) {
    if (v == null) return "null";
    if (v instanceof Float f) return "\"f32:" + Integer.toHexString(Float.floatToRawIntBits(f)) + "\"";
    if (v instanceof Double d) return "\"f64:" + Long.toHexString(Double.doubleToRawLongBits(d)) + "\"";
    return "\"" + v.getClass().getSimpleName() + ":" + v + "\"";
  }
}
