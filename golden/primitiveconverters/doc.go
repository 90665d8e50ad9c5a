// Package primitiveconverters holds golden fixtures of Kafka Connect's
// primitive converters (BooleanConverter, ShortConverter,
// IntegerConverter, LongConverter, FloatConverter, DoubleConverter),
// captured from the real Java converters by capture/Capture.java (run
// capture.sh to refresh them), and the test that checks kcd's converters
// against them byte for byte.
package primitiveconverters
