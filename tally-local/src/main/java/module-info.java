/** The embedded file store ({@code file:}), shared by every process on a host. */
module dev.tally.local {
  requires dev.tally;

  exports dev.tally.local; // LocalStoreInspector, for the tally command's inspect tools

  provides dev.tally.spi.StoreProvider with dev.tally.local.LocalStoreProvider;
}
