package web

import "github.com/go-chi/chi/v5"

// labRoutes are the Soft-RoCE lab state: GET /api/lab and GET /lab.
func (s *Server) labRoutes(r chi.Router) {
	r.Get("/api/lab", s.labJSON)
	r.Get("/lab", s.labPage)
}
