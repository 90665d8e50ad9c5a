package io.kcd.javahost;

import io.kcd.javahost.proto.ConfigKey;
import io.kcd.javahost.proto.PluginConfigResponse;
import io.kcd.javahost.proto.ConfigValue;
import io.kcd.javahost.proto.ListPluginsResponse;
import io.kcd.javahost.proto.Plugin;
import io.kcd.javahost.proto.ValidateRequest;
import io.kcd.javahost.proto.ValidateResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.PluginDesc;
import org.apache.kafka.connect.runtime.isolation.PluginUtils;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.ConverterConfig;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/** The plugins on plugin.path, isolated exactly as Kafka Connect does, and what kcd asks of them. */
final class Catalog {
  final Plugins plugins;

  Catalog(String pluginPath) {
    this(pluginPath, "hybrid_warn");
  }

  /** discovery is Kafka Connect's plugin.discovery. */
  Catalog(String pluginPath, String discovery) {
    Map<String, String> props = new HashMap<>();
    props.put("plugin.path", pluginPath);
    props.put("plugin.discovery", discovery);
    this.plugins = new Plugins(props);
  }

  /** Every plugin as Kafka Connect's /connector-plugins?connectorsOnly=false lists it, with aliases. */
  ListPluginsResponse list() {
    List<PluginDesc<?>> all = all();
    Map<String, Set<String>> aliases = aliases(all);
    ListPluginsResponse.Builder b = ListPluginsResponse.newBuilder();
    Set<String> seen = new TreeSet<>();
    for (PluginDesc<?> d : all) {
      if (!seen.add(d.typeName() + "\0" + d.className() + "\0" + d.version())) {
        continue;
      }
      b.addPlugins(Plugin.newBuilder().setClassName(d.className()).setType(d.typeName())
          .setVersion(d.version())
          .addAllAliases(aliases.getOrDefault(d.className(), Set.of())));
    }
    return b.build();
  }

  private List<PluginDesc<?>> all() {
    List<PluginDesc<?>> all = new ArrayList<>();
    all.addAll(plugins.sourceConnectors());
    all.addAll(plugins.sinkConnectors());
    all.addAll(plugins.converters());
    all.addAll(plugins.headerConverters());
    all.addAll(plugins.transformations());
    all.addAll(plugins.predicates());
    return all;
  }

  /**
   * A plugin's short names, as Connect's PluginUtils.computeAliases gives them:
   * the simple and the pruned name, where no other plugin class claims the same.
   */
  private static Map<String, Set<String>> aliases(List<PluginDesc<?>> all) {
    Map<String, Set<String>> classesOf = new HashMap<>();
    for (PluginDesc<?> d : all) {
      classesOf.computeIfAbsent(PluginUtils.simpleName(d), k -> new TreeSet<>()).add(d.className());
      classesOf.computeIfAbsent(PluginUtils.prunedName(d), k -> new TreeSet<>()).add(d.className());
    }
    Map<String, Set<String>> out = new HashMap<>();
    classesOf.forEach((alias, classes) -> {
      if (classes.size() == 1) {
        String cls = classes.iterator().next();
        if (!alias.equals(cls)) {
          out.computeIfAbsent(cls, k -> new TreeSet<>()).add(alias);
        }
      }
    });
    return out;
  }

  /** A new connector instance (class name or alias); its loader is the connector's. */
  Connector newConnector(String className) {
    return plugins.newConnector(className);
  }

  /**
   * Loads a plugin class, named in full or by alias, through a loader: a
   * connector's (so its own copy wins, as in Kafka Connect), or Connect's
   * delegating loader.
   */
  Class<?> loadClass(ClassLoader loader, String name) throws ClassNotFoundException {
    name = name.trim();
    return loader.loadClass(aliasToClass().getOrDefault(name, name));
  }

  private volatile Map<String, String> aliasToClass;

  private Map<String, String> aliasToClass() {
    Map<String, String> m = aliasToClass;
    if (m == null) {
      m = new HashMap<>();
      for (Map.Entry<String, Set<String>> e : aliases(all()).entrySet()) {
        for (String alias : e.getValue()) {
          m.put(alias, e.getKey());
        }
      }
      aliasToClass = m;
    }
    return m;
  }

  /** A new instance of a plugin class, constructed with its own loader as context loader. */
  @SuppressWarnings("unchecked")
  static <T> T instantiate(Class<?> cls, Class<T> base) {
    if (!base.isAssignableFrom(cls)) {
      throw new org.apache.kafka.common.config.ConfigException(
          cls.getName() + " is not a " + base.getSimpleName());
    }
    try (LoaderSwap ignored = Tccl.swap(cls.getClassLoader())) {
      return (T) cls.getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException e) {
      throw new org.apache.kafka.connect.errors.ConnectException(
          "instantiating " + cls.getName(), Errors.unwrap(e));
    }
  }

  /**
   * The plugin-specific part of Kafka Connect's validation: the connector's
   * ConfigDef and validate(props), and the ConfigDefs of the converters,
   * transforms and predicates the config names, keys prefixed as configured.
   */
  ValidateResponse validate(ValidateRequest req) {
    Map<String, String> config = new HashMap<>(req.getConfigMap());
    Connector connector = newConnector(req.getConnectorClass());
    ClassLoader loader = connector.getClass().getClassLoader();
    ValidateResponse.Builder b = ValidateResponse.newBuilder()
        .setConnectorType(connector instanceof SinkConnector ? "sink" : "source");
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      ConfigDef def = connector.config();
      Config result = connector.validate(config);
      if (def != null) {
        addKeys(b, def, "");
      }
      if (result != null) {
        addValues(b, def, result.configValues(), "");
      }
      for (String conv : new String[] {"key.converter", "value.converter", "header.converter"}) {
        String cls = config.get(conv);
        if (cls == null || cls.isBlank()) {
          continue;
        }
        Class<?> base = conv.equals("header.converter") ? HeaderConverter.class : Converter.class;
        addPluginDef(b, loader, conv, cls, base, config, conv + ".");
      }
      for (String alias : listOf(config.get("transforms"))) {
        String prefix = "transforms." + alias + ".";
        addPluginDef(b, loader, prefix + "type", config.get(prefix + "type"), Transformation.class,
            config, prefix);
      }
      for (String alias : listOf(config.get("predicates"))) {
        String prefix = "predicates." + alias + ".";
        addPluginDef(b, loader, prefix + "type", config.get(prefix + "type"), Predicate.class,
            config, prefix);
      }
    }
    return b.build();
  }

  private void addPluginDef(ValidateResponse.Builder b, ClassLoader loader, String typeKey,
      String className, Class<?> base, Map<String, String> config, String prefix) {
    if (className == null || className.isBlank()) {
      b.addValues(ConfigValue.newBuilder().setName(typeKey).setVisible(true)
          .addErrors("Missing required configuration \"" + typeKey + "\" which has no default value."));
      return;
    }
    ConfigDef def;
    try {
      Class<?> cls = loadClass(loader, className);
      Object plugin = instantiate(cls, base);
      try (LoaderSwap ignored = Tccl.swap(cls.getClassLoader())) {
        if (plugin instanceof Transformation) {
          def = ((Transformation<?>) plugin).config();
        } else if (plugin instanceof Predicate) {
          def = ((Predicate<?>) plugin).config();
        } else if (plugin instanceof HeaderConverter) {
          def = ((HeaderConverter) plugin).config();
        } else {
          def = ((Converter) plugin).config();
        }
      }
    } catch (ClassNotFoundException | RuntimeException | LinkageError e) {
      b.addValues(ConfigValue.newBuilder().setName(typeKey).setValue(className).setVisible(true)
          .addErrors("Invalid value " + className + " for configuration " + typeKey + ": "
              + (e instanceof ClassNotFoundException ? "Class " + className + " could not be found."
                  : e.toString())));
      return;
    }
    if (def == null) {
      return;
    }
    Map<String, String> sub = new HashMap<>();
    config.forEach((k, v) -> {
      if (k.startsWith(prefix)) {
        sub.put(k.substring(prefix.length()), v);
      }
    });
    if (base == Converter.class || base == HeaderConverter.class) {
      // Kafka Connect's herder passes the converter's role (key, value or
      // header) in, as it does when it configures one; converter.type has
      // no default, so validating without it always fails.
      sub.put(ConverterConfig.TYPE_CONFIG, typeKey.substring(0, typeKey.indexOf('.')));
    }
    addKeys(b, def, prefix);
    addValues(b, def, def.validate(sub), prefix);
  }

  static List<String> listOf(String s) {
    List<String> out = new ArrayList<>();
    if (s == null) {
      return out;
    }
    for (String p : s.split(",")) {
      if (!p.trim().isEmpty()) {
        out.add(p.trim());
      }
    }
    return out;
  }

  private static void addKeys(ValidateResponse.Builder b, ConfigDef def, String prefix) {
    for (ConfigDef.ConfigKey k : new TreeMap<>(def.configKeys()).values()) {
      b.addKeys(keyOf(k, prefix));
    }
  }

  private static ConfigKey.Builder keyOf(ConfigDef.ConfigKey k, String prefix) {
    ConfigKey.Builder kb = ConfigKey.newBuilder().setName(prefix + k.name)
        .setType(k.type.name())
        .setImportance(k.importance == null ? "" : k.importance.name())
        .setDocumentation(k.documentation == null ? "" : k.documentation)
        .setGroup(k.group == null ? "" : k.group)
        .setOrderInGroup(k.orderInGroup)
        .setWidth(k.width == null ? "" : k.width.name())
        .setDisplayName(k.displayName == null ? "" : k.displayName);
    for (String d : k.dependents) {
      kb.addDependents(prefix + d);
    }
    if (k.hasDefault()) {
      kb.setHasDefault(true);
      if (k.defaultValue != null) {
        kb.setDefaultValue(ConfigDef.convertToString(k.defaultValue, k.type));
      }
    }
    return kb;
  }

  /**
   * The ConfigDef of a converter, header converter, transformation or
   * predicate, in its own order, as Kafka Connect's
   * GET /connector-plugins/{plugin}/config lists it. A class that is both a
   * converter and a header converter counts as a converter, as there.
   */
  PluginConfigResponse pluginConfig(String name) throws Exception {
    Class<?> cls = loadClass(plugins.delegatingLoader(), name);
    ConfigDef def;
    try (LoaderSwap ignored = Tccl.swap(cls.getClassLoader())) {
      Object plugin = instantiate(cls, Object.class);
      if (plugin instanceof Converter) {
        def = ((Converter) plugin).config();
      } else if (plugin instanceof HeaderConverter) {
        def = ((HeaderConverter) plugin).config();
      } else if (plugin instanceof Transformation) {
        def = ((Transformation<?>) plugin).config();
      } else if (plugin instanceof Predicate) {
        def = ((Predicate<?>) plugin).config();
      } else {
        throw new org.apache.kafka.connect.errors.ConnectException(
            cls.getName() + " is not a converter, header converter, transformation or predicate");
      }
    }
    PluginConfigResponse.Builder b = PluginConfigResponse.newBuilder();
    if (def != null) {
      for (ConfigDef.ConfigKey k : def.configKeys().values()) {
        b.addKeys(keyOf(k, ""));
      }
    }
    return b.build();
  }

  private static void addValues(ValidateResponse.Builder b, ConfigDef def,
      List<org.apache.kafka.common.config.ConfigValue> values, String prefix) {
    for (org.apache.kafka.common.config.ConfigValue v : values) {
      ConfigValue.Builder vb = ConfigValue.newBuilder().setName(prefix + v.name())
          .setVisible(v.visible()).addAllErrors(v.errorMessages());
      ConfigDef.ConfigKey key = def == null ? null : def.configKeys().get(v.name());
      if (v.value() != null) {
        vb.setValue(render(v.value(), key == null ? null : key.type));
      }
      for (Object r : v.recommendedValues()) {
        vb.addRecommendedValues(render(r, key == null ? null : key.type));
      }
      b.addValues(vb);
    }
  }

  /** A config value as text; a password stays hidden. */
  private static String render(Object v, ConfigDef.Type type) {
    if (v instanceof Password || type == ConfigDef.Type.PASSWORD) {
      return Password.HIDDEN;
    }
    if (type == null) {
      return v instanceof Class ? ((Class<?>) v).getName() : String.valueOf(v);
    }
    try {
      return ConfigDef.convertToString(v, type);
    } catch (RuntimeException e) {
      return String.valueOf(v);
    }
  }
}
