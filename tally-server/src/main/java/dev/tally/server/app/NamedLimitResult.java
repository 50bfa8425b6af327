package dev.tally.server.app;

import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.NamedLimits.Outcome;
import java.util.List;

/** The decision of the operator's named limits on a request's descriptors. */
public record NamedLimitResult(Outcome outcome, List<Descriptor> descriptors) {}
