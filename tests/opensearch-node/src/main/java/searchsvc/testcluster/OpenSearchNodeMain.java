package searchsvc.testcluster;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * Runs one real OpenSearch node for the tests, the way OpenSearch's own test framework does: a {@link Node} with
 * classpath plugins, without going through Bootstrap (no distribution archive is available here, and Bootstrap
 * refuses to run as root, which the tests and CI are).
 *
 * <p>Usage: {@code java -cp 'target/classes:target/dependency/*' searchsvc.testcluster.OpenSearchNodeMain HOME}.
 * All settings come from {@code HOME/config/opensearch.yml}, which tests/opensearch_cluster.py writes, so a node
 * restarted with the same HOME gets the same settings and data. SIGTERM closes the node cleanly.
 */
public final class OpenSearchNodeMain {

    /**
     * Netty4Plugin gives the HTTP and transport layers; CommonAnalysisPlugin the stemmer and other filters;
     * MapperExtrasPlugin the token_count field; PainlessPlugin the scripted similarity that counts a word in a
     * paper (the BM25F rescoring's). All four are modules of every OpenSearch distribution. The fifth,
     * TestClusterSettingsPlugin, is the test cluster's own: it makes a test-only index setting settable.
     */
    static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4Plugin.class,
        CommonAnalysisPlugin.class,
        MapperExtrasPlugin.class,
        PainlessPlugin.class,
        TestClusterSettingsPlugin.class
    );

    private OpenSearchNodeMain() {}

    /** Node's constructor that takes classpath plugins is protected. */
    static final class PluginNode extends Node {
        PluginNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: OpenSearchNodeMain HOME  (settings are read from HOME/config/opensearch.yml)");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        if (!Files.isRegularFile(home.resolve("config").resolve("opensearch.yml"))) {
            System.err.println("missing " + home.resolve("config").resolve("opensearch.yml"));
            System.exit(2);
        }
        Logger logger = LogManager.getLogger(OpenSearchNodeMain.class);
        Settings initial = Settings.builder().put(Environment.PATH_HOME_SETTING.getKey(), home.toString()).build();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            initial,
            Collections.emptyMap(),
            null,
            () -> {
                throw new IllegalStateException("node.name must be set in opensearch.yml");
            }
        );
        Node node;
        try {
            node = new PluginNode(environment, PLUGINS);
            node.start();
        } catch (Throwable e) {
            logger.error("node failed to start", e);
            LogManager.shutdown();
            // Exit at once: threads the half-built node started must not keep the JVM alive.
            Runtime.getRuntime().halt(1);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                if (!node.awaitClose(20, TimeUnit.SECONDS)) {
                    logger.warn("node did not close within 20s");
                }
            } catch (Exception e) {
                logger.error("failed to close the node", e);
            } finally {
                LogManager.shutdown();
            }
        }, "searchsvc-node-shutdown"));
        System.out.println("searchsvc-opensearch-node started: " + environment.settings().get("node.name"));
        System.out.flush();
        // OpenSearch's threads are daemons: like Bootstrap's keep-alive thread, hold the JVM until a signal ends it.
        new CountDownLatch(1).await();
    }
}
