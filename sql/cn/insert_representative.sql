-- One representative of a selection (earlier rows of the selection were deleted in the same transaction).
INSERT INTO curated.cn_representatives (selection, doc_id, cluster, distance, rank_in_cluster, cluster_size,
                                        embedder, n_clusters, seed, selected_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
