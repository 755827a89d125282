/* --------------------------------------------------------------------------
 * layer wal (wal: mem[mem]) of items: checkpoint=4194304, group=2, sync=true
 * ------------------------------------------------------------------------ */
/* transactions of file "items.db": record log "items.db-wal", sync, group 2, checkpoint every 4194304 log bytes */
/* end of layer wal of items --------------------------------------------- */
