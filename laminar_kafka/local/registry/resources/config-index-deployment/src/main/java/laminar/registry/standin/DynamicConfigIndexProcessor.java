package laminar.registry.standin;

import java.util.ArrayList;
import java.util.List;

import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationValue;
import org.jboss.jandex.DotName;
import org.jboss.jandex.Type;

import apicurio.common.app.components.config.index.DynamicPropertiesInfoRecorder;
import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.SyntheticBeanBuildItem;
import io.quarkus.arc.processor.InjectionPointInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;

/**
 * The build step of laminar-kafka's stand-in for Apicurio's config-index deployment module.
 *
 * <p>It produces the list of runtime-configurable properties that the unserved module would:
 * every field injected with {@code @ConfigProperty} and marked {@code @Dynamic} becomes one
 * {@link DynamicConfigPropertyDef} (name, type, default, label, description, requirements),
 * and the list is registered as the synthetic {@link DynamicConfigPropertyList} bean that the
 * registry's admin API injects.
 */
public class DynamicConfigIndexProcessor {

    private static final DotName CONFIG_PROPERTY =
            DotName.createSimple("org.eclipse.microprofile.config.inject.ConfigProperty");
    private static final DotName DYNAMIC = DotName.createSimple("io.apicurio.common.apps.config.Dynamic");

    @BuildStep
    @Record(ExecutionTime.RUNTIME_INIT)
    void dynamicPropertiesBean(DynamicPropertiesInfoRecorder recorder, BeanDiscoveryFinishedBuildItem beans,
            BuildProducer<SyntheticBeanBuildItem> syntheticBeans) throws ClassNotFoundException {
        List<DynamicConfigPropertyDef> defs = new ArrayList<>();
        for (InjectionPointInfo point : beans.getInjectionPoints()) {
            DynamicConfigPropertyDef def = dynamicProperty(point);
            if (def != null) {
                defs.add(def);
            }
        }
        syntheticBeans.produce(SyntheticBeanBuildItem.configure(DynamicConfigPropertyList.class)
                .runtimeValue(recorder.initializePropertiesInfo(defs))
                .unremovable()
                .setRuntimeInit()
                .done());
    }

    /** The definition of a {@code @Dynamic @ConfigProperty} field, or null for any other injection point. */
    private static DynamicConfigPropertyDef dynamicProperty(InjectionPointInfo point) throws ClassNotFoundException {
        AnnotationInstance property = point.getRequiredQualifier(CONFIG_PROPERTY);
        if (property == null || !point.isField()) {
            return null;
        }
        AnnotationInstance dynamic = point.getTarget().asField().annotation(DYNAMIC);
        if (dynamic == null) {
            return null;
        }
        String name = property.value("name").asString();
        AnnotationValue defaultValue = property.value("defaultValue");
        if (defaultValue == null) {
            throw new IllegalStateException("Dynamic configuration property '" + name + "' must have a default value.");
        }
        // A Supplier<T> field is configured as a T.
        Type type = point.getRequiredType();
        Type valueType = type.kind() == Type.Kind.PARAMETERIZED_TYPE ? type.asParameterizedType().arguments().get(0) : type;
        Class<?> valueClass = Class.forName(valueType.name().toString(), false,
                Thread.currentThread().getContextClassLoader());
        DynamicConfigPropertyDef def = new DynamicConfigPropertyDef(name, valueClass, defaultValue.asString());
        if (dynamic.value("label") != null) {
            def.setLabel(dynamic.value("label").asString());
        }
        if (dynamic.value("description") != null) {
            def.setDescription(dynamic.value("description").asString());
        }
        if (dynamic.value("requires") != null) {
            def.setRequires(dynamic.value("requires").asStringArray());
        }
        return def;
    }
}
