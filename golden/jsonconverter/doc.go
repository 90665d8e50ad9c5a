// Package jsonconverter holds golden fixtures of Kafka Connect's
// JsonConverter, captured from the real Java converter by
// capture/Capture.java (run capture.sh to refresh them), one directory per
// JDK (their Double.toString differ), and the test that checks kcd's
// converter against them byte for byte.
package jsonconverter
