package dev.tally.server.envoy;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Label;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.UnknownFieldSet;
import dev.tally.server.ratelimit.Descriptor.LimitOverride;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.Unit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The hand-written codec against protobuf-java's own encoder and decoder, over descriptors built
 * here field by field from src/main/proto/envoy (written out again, not shared with the codec),
 * so a wrong field number, wire type or nesting in either shows as a mismatch.
 */
class RlsCodecTest {
  static Descriptor request;
  static Descriptor descriptor;
  static Descriptor entry;
  static Descriptor override;
  static Descriptor response;
  static Descriptor status;
  static Descriptor rateLimit;
  static Descriptor header;
  static Descriptor duration;

  static FieldDescriptorProto field(String name, int number, Type type, String typeName,
      boolean repeated) {
    FieldDescriptorProto.Builder f = FieldDescriptorProto.newBuilder().setName(name)
        .setNumber(number).setType(type)
        .setLabel(repeated ? Label.LABEL_REPEATED : Label.LABEL_OPTIONAL);
    if (typeName != null) {
      f.setTypeName(typeName);
    }
    return f.build();
  }

  static EnumDescriptorProto units(String name) {
    EnumDescriptorProto.Builder e = EnumDescriptorProto.newBuilder().setName(name);
    String[] names = {"UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR"};
    for (int i = 0; i < names.length; i++) {
      e.addValue(EnumValueDescriptorProto.newBuilder().setName(names[i]).setNumber(i));
    }
    return e.build();
  }

  @BeforeAll
  static void descriptors() throws Exception {
    FileDescriptorProto durationFile = FileDescriptorProto.newBuilder()
        .setName("google/protobuf/duration.proto").setPackage("google.protobuf").setSyntax("proto3")
        .addMessageType(DescriptorProto.newBuilder().setName("Duration")
            .addField(field("seconds", 1, Type.TYPE_INT64, null, false))
            .addField(field("nanos", 2, Type.TYPE_INT32, null, false)))
        .build();
    FileDescriptorProto base = FileDescriptorProto.newBuilder()
        .setName("envoy/config/core/v3/base.proto").setPackage("envoy.config.core.v3")
        .setSyntax("proto3")
        .addMessageType(DescriptorProto.newBuilder().setName("HeaderValue")
            .addField(field("key", 1, Type.TYPE_STRING, null, false))
            .addField(field("value", 2, Type.TYPE_STRING, null, false))
            .addField(field("raw_value", 3, Type.TYPE_BYTES, null, false)))
        .build();
    String rd = ".envoy.extensions.common.ratelimit.v3.RateLimitDescriptor";
    FileDescriptorProto common = FileDescriptorProto.newBuilder()
        .setName("envoy/extensions/common/ratelimit/v3/ratelimit.proto")
        .setPackage("envoy.extensions.common.ratelimit.v3").setSyntax("proto3")
        .addMessageType(DescriptorProto.newBuilder().setName("RateLimitDescriptor")
            .addNestedType(DescriptorProto.newBuilder().setName("Entry")
                .addField(field("key", 1, Type.TYPE_STRING, null, false))
                .addField(field("value", 2, Type.TYPE_STRING, null, false)))
            .addNestedType(DescriptorProto.newBuilder().setName("RateLimitOverride")
                .addEnumType(units("Unit"))
                .addField(field("requests_per_unit", 1, Type.TYPE_UINT32, null, false))
                .addField(field("unit", 2, Type.TYPE_ENUM, rd + ".RateLimitOverride.Unit",
                    false)))
            .addField(field("entries", 1, Type.TYPE_MESSAGE, rd + ".Entry", true))
            .addField(field("limit", 2, Type.TYPE_MESSAGE, rd + ".RateLimitOverride", false)))
        .build();
    String rr = ".envoy.service.ratelimit.v3.RateLimitResponse";
    FileDescriptorProto rls = FileDescriptorProto.newBuilder()
        .setName("envoy/service/ratelimit/v3/rls.proto").setPackage("envoy.service.ratelimit.v3")
        .setSyntax("proto3")
        .addDependency(base.getName()).addDependency(common.getName())
        .addDependency(durationFile.getName())
        .addMessageType(DescriptorProto.newBuilder().setName("RateLimitRequest")
            .addField(field("domain", 1, Type.TYPE_STRING, null, false))
            .addField(field("descriptors", 2, Type.TYPE_MESSAGE, rd, true))
            .addField(field("hits_addend", 3, Type.TYPE_UINT32, null, false)))
        .addMessageType(DescriptorProto.newBuilder().setName("RateLimitResponse")
            .addEnumType(EnumDescriptorProto.newBuilder().setName("Code")
                .addValue(EnumValueDescriptorProto.newBuilder().setName("UNKNOWN").setNumber(0))
                .addValue(EnumValueDescriptorProto.newBuilder().setName("OK").setNumber(1))
                .addValue(EnumValueDescriptorProto.newBuilder().setName("OVER_LIMIT")
                    .setNumber(2)))
            .addNestedType(DescriptorProto.newBuilder().setName("RateLimit")
                .addEnumType(units("Unit"))
                .addField(field("name", 3, Type.TYPE_STRING, null, false))
                .addField(field("requests_per_unit", 1, Type.TYPE_UINT32, null, false))
                .addField(field("unit", 2, Type.TYPE_ENUM, rr + ".RateLimit.Unit", false)))
            .addNestedType(DescriptorProto.newBuilder().setName("DescriptorStatus")
                .addField(field("code", 1, Type.TYPE_ENUM, rr + ".Code", false))
                .addField(field("current_limit", 2, Type.TYPE_MESSAGE, rr + ".RateLimit", false))
                .addField(field("limit_remaining", 3, Type.TYPE_UINT32, null, false))
                .addField(field("duration_until_reset", 4, Type.TYPE_MESSAGE,
                    ".google.protobuf.Duration", false)))
            .addField(field("overall_code", 1, Type.TYPE_ENUM, rr + ".Code", false))
            .addField(field("statuses", 2, Type.TYPE_MESSAGE, rr + ".DescriptorStatus", true))
            .addField(field("response_headers_to_add", 3, Type.TYPE_MESSAGE,
                ".envoy.config.core.v3.HeaderValue", true))
            .addField(field("request_headers_to_add", 4, Type.TYPE_MESSAGE,
                ".envoy.config.core.v3.HeaderValue", true))
            .addField(field("raw_body", 5, Type.TYPE_BYTES, null, false)))
        .build();
    FileDescriptor d = FileDescriptor.buildFrom(durationFile, new FileDescriptor[0]);
    FileDescriptor b = FileDescriptor.buildFrom(base, new FileDescriptor[0]);
    FileDescriptor c = FileDescriptor.buildFrom(common, new FileDescriptor[0]);
    FileDescriptor r = FileDescriptor.buildFrom(rls, new FileDescriptor[] {b, c, d});
    request = r.findMessageTypeByName("RateLimitRequest");
    response = r.findMessageTypeByName("RateLimitResponse");
    status = response.findNestedTypeByName("DescriptorStatus");
    rateLimit = response.findNestedTypeByName("RateLimit");
    descriptor = c.findMessageTypeByName("RateLimitDescriptor");
    entry = descriptor.findNestedTypeByName("Entry");
    override = descriptor.findNestedTypeByName("RateLimitOverride");
    header = b.findMessageTypeByName("HeaderValue");
    duration = d.findMessageTypeByName("Duration");
  }

  static DynamicMessage entry(String key, String value) {
    return DynamicMessage.newBuilder(entry).setField(entry.findFieldByName("key"), key)
        .setField(entry.findFieldByName("value"), value).build();
  }

  @Test
  void decodesARequestAsProtobufWritesIt() throws Exception {
    DynamicMessage limit = DynamicMessage.newBuilder(override)
        .setField(override.findFieldByName("requests_per_unit"), 7)
        .setField(override.findFieldByName("unit"),
            override.findEnumTypeByName("Unit").findValueByName("HOUR"))
        .build();
    DynamicMessage d1 = DynamicMessage.newBuilder(descriptor)
        .addRepeatedField(descriptor.findFieldByName("entries"), entry("remote_address", "10.0.0.1"))
        .build();
    DynamicMessage d2 = DynamicMessage.newBuilder(descriptor)
        .addRepeatedField(descriptor.findFieldByName("entries"), entry("message_type", "marketing"))
        .addRepeatedField(descriptor.findFieldByName("entries"), entry("to_number", "206ü"))
        .setField(descriptor.findFieldByName("limit"), limit)
        .build();
    DynamicMessage m = DynamicMessage.newBuilder(request)
        .setField(request.findFieldByName("domain"), "edge")
        .addRepeatedField(request.findFieldByName("descriptors"), d1)
        .addRepeatedField(request.findFieldByName("descriptors"), d2)
        .setField(request.findFieldByName("hits_addend"), -1) // uint32 4294967295
        // a field this codec does not know, as a newer Envoy might send: skipped
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(9, UnknownFieldSet.Field.newBuilder().addVarint(5).build()).build())
        .build();

    Rls.Request r = RlsCodec.decodeRequest(m.toByteArray());

    assertThat(r.domain()).isEqualTo("edge");
    assertThat(r.hitsAddend()).isEqualTo(4_294_967_295L);
    assertThat(r.descriptors()).hasSize(2);
    assertThat(r.descriptors().get(0).entries()).containsExactly(new Entry("remote_address", "10.0.0.1"));
    assertThat(r.descriptors().get(0).override()).isNull();
    assertThat(r.descriptors().get(1).entries()).containsExactly(
        new Entry("message_type", "marketing"), new Entry("to_number", "206ü"));
    assertThat(r.descriptors().get(1).override()).isEqualTo(new LimitOverride(7, Unit.HOUR));
  }

  @Test
  void writesARequestProtobufReadsBack() throws Exception {
    Rls.Request r = new Rls.Request("edge", List.of(
        new dev.tally.server.ratelimit.Descriptor(List.of(new Entry("a", "1"), new Entry("b", "")),
            new LimitOverride(3, Unit.DAY))), 5);
    DynamicMessage m = DynamicMessage.parseFrom(request, RlsCodec.encodeRequest(r));
    assertThat(m.getField(request.findFieldByName("domain"))).isEqualTo("edge");
    assertThat(m.getField(request.findFieldByName("hits_addend"))).isEqualTo(5);
    DynamicMessage d = (DynamicMessage) m.getRepeatedField(request.findFieldByName("descriptors"), 0);
    assertThat(d.getRepeatedFieldCount(descriptor.findFieldByName("entries"))).isEqualTo(2);
    DynamicMessage l = (DynamicMessage) d.getField(descriptor.findFieldByName("limit"));
    assertThat(l.getField(override.findFieldByName("requests_per_unit"))).isEqualTo(3);
    assertThat(l.getField(override.findFieldByName("unit")).toString()).isEqualTo("DAY");
    assertThat(RlsCodec.decodeRequest(RlsCodec.encodeRequest(r))).isEqualTo(r);
  }

  @Test
  void writesAResponseProtobufReadsAsEnvoyWould() throws Exception {
    Rls.Response r = new Rls.Response(Rls.OVER_LIMIT, List.of(
        new Rls.Status(Rls.OVER_LIMIT, new Rls.Limit("per_ip", 10, Unit.MINUTE.number()), 0,
            Duration.ofSeconds(42, 5)),
        new Rls.Status(Rls.OK, null, 4_294_967_295L, null),
        new Rls.Status(Rls.OK, new Rls.Limit("", 1000, Unit.DAY.number()), 999,
            Duration.ofMillis(250))),
        List.of(new Rls.Header("x-ratelimit-limit", "10")));

    DynamicMessage m = DynamicMessage.parseFrom(response, RlsCodec.encodeResponse(r));

    assertThat(m.getField(response.findFieldByName("overall_code")).toString())
        .isEqualTo("OVER_LIMIT");
    assertThat(m.getRepeatedFieldCount(response.findFieldByName("statuses"))).isEqualTo(3);
    DynamicMessage s0 = (DynamicMessage) m.getRepeatedField(response.findFieldByName("statuses"), 0);
    assertThat(s0.getField(status.findFieldByName("code")).toString()).isEqualTo("OVER_LIMIT");
    DynamicMessage l0 = (DynamicMessage) s0.getField(status.findFieldByName("current_limit"));
    assertThat(l0.getField(rateLimit.findFieldByName("name"))).isEqualTo("per_ip");
    assertThat(l0.getField(rateLimit.findFieldByName("requests_per_unit"))).isEqualTo(10);
    assertThat(l0.getField(rateLimit.findFieldByName("unit")).toString()).isEqualTo("MINUTE");
    DynamicMessage d0 = (DynamicMessage) s0.getField(status.findFieldByName("duration_until_reset"));
    assertThat(d0.getField(duration.findFieldByName("seconds"))).isEqualTo(42L);
    assertThat(d0.getField(duration.findFieldByName("nanos"))).isEqualTo(5);
    DynamicMessage s1 = (DynamicMessage) m.getRepeatedField(response.findFieldByName("statuses"), 1);
    assertThat(s1.hasField(status.findFieldByName("current_limit"))).isFalse();
    assertThat(s1.getField(status.findFieldByName("limit_remaining"))).isEqualTo(-1); // uint32 max
    DynamicMessage s2 = (DynamicMessage) m.getRepeatedField(response.findFieldByName("statuses"), 2);
    assertThat(s2.getField(status.findFieldByName("limit_remaining"))).isEqualTo(999);
    DynamicMessage h = (DynamicMessage) m.getRepeatedField(
        response.findFieldByName("response_headers_to_add"), 0);
    assertThat(h.getField(header.findFieldByName("key"))).isEqualTo("x-ratelimit-limit");
    assertThat(h.getField(header.findFieldByName("value"))).isEqualTo("10");

    assertThat(RlsCodec.decodeResponse(m.toByteArray())).isEqualTo(r);
  }
}
