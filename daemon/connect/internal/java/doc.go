// Package java reproduces, byte for byte, the few pieces of the Java
// platform whose output Kafka Connect's converters put on the wire:
// Double.toString and Float.toString (both the JDK ≤ 18 FloatingDecimal
// algorithm and the shortest-decimal one of JDK 19+), BigDecimal.toString,
// the iteration order of a java.util.HashMap, and Object.toString of
// Connect values.
package java
