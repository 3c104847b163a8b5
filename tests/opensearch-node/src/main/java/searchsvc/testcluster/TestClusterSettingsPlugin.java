package searchsvc.testcluster;

import java.util.List;

import org.opensearch.common.settings.Setting;
import org.opensearch.index.IndexService;
import org.opensearch.plugins.Plugin;

/**
 * Registers index settings that OpenSearch defines but only its own test framework makes settable (its
 * {@code org.opensearch.test.InternalSettingsPlugin} registers these and others), so that the test cluster can
 * shorten them for the tests' indexes.
 *
 * <p>{@code index.soft_deletes.retention_lease.sync_interval} (30 s by default): a shard keeps the soft-deleted copies
 * that an update leaves for as long as its replicas' peer-recovery retention leases retain them, and those leases
 * advance only when they are synced, every interval. A merge asked for right after an update therefore cannot drop
 * the old copies for up to that long, and the tests that wait for the merge (tests/helpers/backends.py
 * {@code merged()}) waited ~30 s each. tests/helpers/opensearch_cluster.py sets it to 1 s by an index template of
 * the test cluster's own; the service's code never sets it, and a real cluster keeps its default.
 */
public final class TestClusterSettingsPlugin extends Plugin {

    @Override
    public List<Setting<?>> getSettings() {
        return List.of(IndexService.RETENTION_LEASE_SYNC_INTERVAL_SETTING);
    }
}
