package kaas.interop;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.common.config.ConfigResource;

/**
 * kaas.interop.ListConfigResources BOOTSTRAP [TYPE...]
 *
 * Calls AdminClient.listConfigResources for the named ConfigResource.Type names (none: every
 * type) and prints {"resources":["TYPE:name",...]} sorted, or {"error":"Class: message"}.
 */
public final class ListConfigResources {
    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: ListConfigResources BOOTSTRAP [TYPE...]");
            System.exit(2);
        }
        Set<ConfigResource.Type> types = new HashSet<>();
        for (int i = 1; i < args.length; i++) {
            types.add(ConfigResource.Type.valueOf(args[i]));
        }
        try (Admin admin = Admin.create(Common.adminProps(args[0]))) {
            Collection<ConfigResource> listed =
                    admin.listConfigResources(types, new ListConfigResourcesOptions()).all().get();
            List<String> names = new ArrayList<>();
            for (ConfigResource r : listed) {
                names.add(Common.q(r.type() + ":" + r.name()));
            }
            names.sort(null);
            System.out.println("{\"resources\":[" + String.join(",", names) + "]}");
            System.exit(0);
        } catch (Throwable t) {
            Throwable cause = t.getCause() != null ? t.getCause() : t;
            System.out.println("{\"error\":" + Common.q(cause.getClass().getSimpleName() + ": " + cause.getMessage()) + "}");
            System.exit(0);
        }
    }
}
