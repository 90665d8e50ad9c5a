package io.kcd.javahost;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * A task's converters and transformation chain, built from the connector's
 * config as Kafka Connect's Worker and ConnectorConfig build them.
 */
final class Stages<R extends ConnectRecord<R>> implements Closeable {
  final Converter keyConverter;
  final Converter valueConverter;
  final HeaderConverter headerConverter;
  private final List<Stage<R>> chain;
  /** errors.tolerance=all: a record failing its transforms or converters is skipped. */
  final boolean tolerateAll;

  Stages(Catalog catalog, ClassLoader connectorLoader, Map<String, String> connector,
      Map<String, String> worker) {
    ClassLoader delegatingLoader = catalog.plugins.delegatingLoader();
    keyConverter = converter(catalog, connectorLoader, delegatingLoader, connector, worker, "key");
    valueConverter =
        converter(catalog, connectorLoader, delegatingLoader, connector, worker, "value");
    headerConverter = headerConverter(catalog, connectorLoader, delegatingLoader, connector, worker);
    chain = chain(catalog, connectorLoader, connector);
    tolerateAll = "all".equalsIgnoreCase(connector.getOrDefault("errors.tolerance", "none").trim());
  }

  /** The record after every transform; null when one dropped it. */
  R apply(R record) {
    for (Stage<R> s : chain) {
      record = s.apply(record);
      if (record == null) {
        return null;
      }
    }
    return record;
  }

  @Override
  public void close() {
    for (Stage<R> s : chain) {
      Utils.closeQuietly(s.transformation, "transformation");
      if (s.predicate != null) {
        Utils.closeQuietly(s.predicate, "predicate");
      }
    }
    Utils.closeQuietly(keyConverter instanceof Closeable ? (Closeable) keyConverter : null,
        "key converter");
    Utils.closeQuietly(valueConverter instanceof Closeable ? (Closeable) valueConverter : null,
        "value converter");
    Utils.closeQuietly(headerConverter, "header converter");
  }

  /**
   * The connector's converter, else the worker's, else JsonConverter (Kafka
   * Connect's worker default); configured with the sub-settings of the config
   * that named it, and converter.type.
   */
  private static Converter converter(Catalog catalog, ClassLoader connectorLoader, ClassLoader delegatingLoader,
      Map<String, String> connector, Map<String, String> worker, String kind) {
    String key = kind + ".converter";
    Choice ch = choose(connector, worker, key, connectorLoader, delegatingLoader, JsonConverter.class.getName());
    Map<String, String> source = ch.source();
    ClassLoader loader = ch.loader();
    String cls = ch.cls();
    Map<String, Object> conf = new HashMap<>(withPrefix(source, key + "."));
    conf.put("converter.type", kind);
    Converter c = Catalog.instantiate(load(catalog, loader, cls, key), Converter.class);
    try (LoaderSwap ignored = Tccl.swap(c.getClass().getClassLoader())) {
      c.configure(conf, kind.equals("key"));
    }
    return c;
  }

  /** Where a converter setting comes from: its settings, the loader to find its class with, and the class. */
  private record Choice(Map<String, String> source, ClassLoader loader, String cls) {}

  /** The connector's converter if it names one, else the worker's, else Kafka Connect's default. */
  private static Choice choose(Map<String, String> connector, Map<String, String> worker, String key,
      ClassLoader connectorLoader, ClassLoader delegatingLoader, String defaultClass) {
    if (notBlank(connector.get(key))) {
      return new Choice(connector, connectorLoader, connector.get(key));
    }
    if (notBlank(worker.get(key))) {
      return new Choice(worker, delegatingLoader, worker.get(key));
    }
    return new Choice(Map.of(), delegatingLoader, defaultClass);
  }

  private static HeaderConverter headerConverter(Catalog catalog, ClassLoader connectorLoader,
      ClassLoader delegatingLoader, Map<String, String> connector, Map<String, String> worker) {
    String key = "header.converter";
    Choice ch = choose(connector, worker, key, connectorLoader, delegatingLoader, SimpleHeaderConverter.class.getName());
    Map<String, String> source = ch.source();
    ClassLoader loader = ch.loader();
    String cls = ch.cls();
    Map<String, Object> conf = new HashMap<>(withPrefix(source, key + "."));
    conf.put("converter.type", "header");
    HeaderConverter c = Catalog.instantiate(load(catalog, loader, cls, key), HeaderConverter.class);
    try (LoaderSwap ignored = Tccl.swap(c.getClass().getClassLoader())) {
      c.configure(conf);
    }
    return c;
  }

  /**
   * The transformation chain as ConnectorConfig.transformationStages builds
   * it: each alias of `transforms` configured with its prefixed settings (less
   * predicate and negate), guarded by its predicate when it names one.
   */
  @SuppressWarnings("unchecked")
  private static <R extends ConnectRecord<R>> List<Stage<R>> chain(Catalog catalog, ClassLoader loader,
      Map<String, String> connector) {
    List<Stage<R>> out = new ArrayList<>();
    for (String alias : Catalog.listOf(connector.get("transforms"))) {
      String prefix = "transforms." + alias + ".";
      Map<String, Object> conf = new HashMap<>(withPrefix(connector, prefix));
      String type = (String) conf.get("type");
      if (!notBlank(type)) {
        throw new org.apache.kafka.common.config.ConfigException(
            "Missing required configuration \"" + prefix + "type\" which has no default value.");
      }
      Transformation<R> t =
          Catalog.instantiate(load(catalog, loader, type, prefix + "type"), Transformation.class);
      Object predicateAlias = conf.remove("predicate");
      Object negate = conf.remove("negate");
      try (LoaderSwap ignored = Tccl.swap(t.getClass().getClassLoader())) {
        t.configure(conf);
      }
      Predicate<R> p = null;
      if (predicateAlias != null && notBlank(predicateAlias.toString())) {
        String pprefix = "predicates." + predicateAlias.toString().trim() + ".";
        Map<String, Object> pconf = new HashMap<>(withPrefix(connector, pprefix));
        String ptype = (String) pconf.get("type");
        if (!notBlank(ptype)) {
          throw new org.apache.kafka.common.config.ConfigException(
              "Missing required configuration \"" + pprefix + "type\" which has no default value.");
        }
        p = Catalog.instantiate(load(catalog, loader, ptype, pprefix + "type"), Predicate.class);
        try (LoaderSwap ignored = Tccl.swap(p.getClass().getClassLoader())) {
          p.configure(pconf);
        }
      }
      out.add(new Stage<>(t, p, negate != null && Boolean.parseBoolean(negate.toString().trim())));
    }
    return out;
  }

  private static Class<?> load(Catalog catalog, ClassLoader loader, String cls, String key) {
    try {
      return catalog.loadClass(loader, cls);
    } catch (ClassNotFoundException e) {
      throw new org.apache.kafka.common.config.ConfigException(key, cls,
          "Class " + cls + " could not be found.");
    }
  }

  static Map<String, String> withPrefix(Map<String, String> m, String prefix) {
    Map<String, String> out = new HashMap<>();
    m.forEach((k, v) -> {
      if (k.startsWith(prefix)) {
        out.put(k.substring(prefix.length()), v);
      }
    });
    return out;
  }

  private static boolean notBlank(String s) {
    return s != null && !s.isBlank();
  }

  /** One transform, applied when it has no predicate or the predicate (negated or not) matches. */
  private static final class Stage<R extends ConnectRecord<R>> {
    final Transformation<R> transformation;
    final Predicate<R> predicate;
    final boolean negate;

    Stage(Transformation<R> transformation, Predicate<R> predicate, boolean negate) {
      this.transformation = transformation;
      this.predicate = predicate;
      this.negate = negate;
    }

    R apply(R record) {
      if (predicate == null || negate ^ predicate.test(record)) {
        return transformation.apply(record);
      }
      return record;
    }
  }
}
