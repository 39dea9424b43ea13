import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaAlteration.Op;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/** The Java Admin's client quota calls (what kafka-configs.sh uses) against the gateway. Exits 1 on a failed check. */
public class ClientQuotas {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            ClientQuotaEntity app = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "java-app"));
            Map<String, String> defaultUser = new HashMap<>();
            defaultUser.put(ClientQuotaEntity.USER, null);
            ClientQuotaEntity anyUser = new ClientQuotaEntity(defaultUser);
            admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(app, List.of(new Op("producer_byte_rate", 1024.0))),
                new ClientQuotaAlteration(anyUser, List.of(new Op("consumer_byte_rate", 2048.0))))).all().get();

            Map<ClientQuotaEntity, Map<String, Double>> all = describe(admin, ClientQuotaFilter.all());
            check(all.equals(Map.of(app, Map.of("producer_byte_rate", 1024.0), anyUser,
                                    Map.of("consumer_byte_rate", 2048.0))), "describe all: " + all);
            Map<ClientQuotaEntity, Map<String, Double>> defaults = describe(admin, ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.USER))));
            check(defaults.keySet().equals(Set.of(anyUser)), "describe the default user: " + defaults);

            try {
                admin.alterClientQuotas(List.of(new ClientQuotaAlteration(app, List.of(new Op("bogus", 1.0)))))
                    .all().get();
                check(false, "an unknown key is refused");
            } catch (ExecutionException refused) {
                check(refused.getCause() instanceof InvalidRequestException, "refused with: " + refused.getCause());
            }

            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(app, List.of(new Op("producer_byte_rate", null)))))
                .all().get();
            check(!describe(admin, ClientQuotaFilter.all()).containsKey(app), "the removed quota is gone");
        }
        System.out.println("client quotas: ok");
    }

    private static Map<ClientQuotaEntity, Map<String, Double>> describe(Admin admin, ClientQuotaFilter filter)
            throws Exception {
        return admin.describeClientQuotas(filter).entities().get();
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
